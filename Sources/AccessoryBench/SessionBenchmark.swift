import AccessoryCore
import AccessoryTraces
import AccessoryKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `accessory-bench session` (under accessory-sim): bulk echo through ``AccessorySession``
/// against a plain C libusb client (`benchmarks/c/bulk_echo.c`), side by side in one run on
/// the same simulated loopback accessory (1209:0001).
///
/// - (a) echo throughput in-process: a session with one transfer in flight each way, 64 KiB
///   at a time (sync style), and with four in flight each way (async), against
///   `bulk_echo --sync` and `bulk_echo --async 4`, with the same sizes. Both sides time the
///   echo loop alone and count the CPU time of their whole process during it (getrusage).
/// - (b) whole processes: `accessoryctl open` piping a file through the accessory, against
///   `bulk_echo --async 4` echoing as much (wall, CPU and peak RSS of each process).
/// - (c) per-transfer overhead: 8-byte round trips, one at a time, in µs each.
/// - (d) write size: the same echo with default options and a reader alongside, written in
///   16 KiB writes against 64 KiB writes (target: 16 KiB ≥ 0.9 × 64 KiB).
/// - (e) capture cost (issue 27): the async depth-4 echo of (a) through a manager recording
///   every transfer (`Configuration.capturePath`, a file in the temp dir) against one that
///   records nothing, alternating (target: throughput with capture ≥ 0.95 × without).
///
/// (c) also measures one-transfer calls: `transferOut(0x01, …)` then
/// `transferIn(0x81, length: 8)`, beside the stream's round trips and C's.
///
/// Each figure is the median of `runs` runs (by time), ours and C's runs alternating; (b) runs
/// `pipeRuns` rounds (an even count's median is the mean of the middle two).
struct SessionBenchmark {
    var cClient: String
    var accessoryctl: String
    /// Echo size for (a), MiB.
    var megabytes: Int
    /// Size piped through the processes of (b), MiB.
    var pipeMegabytes: Int
    /// Round trips for (c).
    var roundTrips: Int
    var runs: Int
    /// Rounds of (b), each one `accessoryctl open` and one C client.
    var pipeRuns: Int
    /// `accessoryctl open --idle-timeout` in (b), seconds; included in its wall time.
    var idleTimeout = 0.1
    /// For profiling (`--profile calls|streams|async|capture`): only that in-process echo,
    /// `runs` times, with no C client and no tables (8-byte round trips for `calls` and
    /// `streams`; `capture` is `async` through a manager recording a capture).
    var profile: String?
    /// For `--capture-dirs A,B`: only the capture cost, with the file in each folder.
    var captureFolders: [String]? = nil

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// One measured echo.
    struct Sample {
        var bytes: Int
        var seconds: Double
        var cpu: Double
        var transfers: Int
        var maxRSSKiB: Int?

        var megabytesPerSecond: Double { Double(bytes) / seconds / 1e6 }
        var microsecondsPerTransfer: Double { seconds / Double(max(transfers, 1)) * 1e6 }
        var cpuMicrosecondsPerTransfer: Double { cpu / Double(max(transfers, 1)) * 1e6 }
    }

    func run() async throws -> [String] {
        guard ProcessInfo.processInfo.environment["ACCESSORY_SIM_SOCKET"] != nil else {
            throw Failure(description: "run it under accessory-sim: accessory-sim --accessory 1209:0001:SN1 -- accessory-bench session")
        }
        guard FileManager.default.isExecutableFile(atPath: cClient) else {
            throw Failure(description: "no C client at \(cClient); build it with benchmarks/c/build.sh (or set BENCH_C_DIR)")
        }
        let size = megabytes << 20
        let chunk = 64 * 1024
        if let profile { return try await profileOnly(profile, size: size, chunk: chunk) }
        if let captureFolders { return try await captureOnly(captureFolders, size: size, chunk: chunk) }

        // (b) first, while this process is small: a child's peak RSS, as wait4 reports it,
        // includes what its parent had mapped when it was spawned.
        let dir = URL(fileURLWithPath: NSTemporaryDirectory())
        let input = dir.appendingPathComponent("session-bench-\(pipeMegabytes)m.bin").path
        let output = dir.appendingPathComponent("session-bench-out.bin").path
        _ = Self.spawn(["head", "-c", "\(pipeMegabytes << 20)", "/dev/urandom"], stdin: "/dev/null", stdout: input)
        defer {
            try? FileManager.default.removeItem(atPath: input)
            try? FileManager.default.removeItem(atPath: output)
        }
        var pipeRounds: [(ours: Sample, c: Sample)] = []
        let (ctl, cProcess) = try await interleaved(rounds: pipeRuns, record: { pipeRounds.append(($0, $1)) }, {
            let m = Self.spawn(
                [accessoryctl, "open", "1209:0001", "--protocol", "org.example.loopback", "--idle-timeout", String(idleTimeout)],
                stdin: input, stdout: output)
            let echoed = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? NSNumber)?.intValue ?? -1
            guard m.status == 0, echoed == pipeMegabytes << 20 else {
                throw Failure(description: "accessoryctl open exited \(m.status) after echoing \(echoed) bytes")
            }
            guard FileManager.default.contentsEqual(atPath: input, andPath: output) else {
                throw Failure(description: "accessoryctl open echoed \(echoed) bytes that differ from its input")
            }
            return Sample(bytes: echoed, seconds: m.wall, cpu: m.cpu, transfers: echoed / chunk, maxRSSKiB: m.maxRSSKiB)
        }, {
            let m = Self.spawn([cClient, "--async", "4", "--size", "\(pipeMegabytes << 20)", "--chunk", "\(chunk)"], stdin: "/dev/null", stdout: output)
            guard m.status == 0 else { throw Failure(description: "bulk_echo exited \(m.status)") }
            return Sample(bytes: pipeMegabytes << 20, seconds: m.wall, cpu: m.cpu, transfers: (pipeMegabytes << 20) / chunk, maxRSSKiB: m.maxRSSKiB)
        })

        // (a) and (c), in process; each run of ours is followed by one of C's, so that drift
        // in the simulator's speed hits both alike.
        let data = Self.randomBytes(size)
        let manager = try await AccessoryManager()
        guard let accessory = await manager.connectedAccessories.first(where: { $0.descriptor.vendor == 0x1209 && $0.descriptor.product == 0x0001 }) else {
            await manager.shutdown()
            throw Failure(description: "no accessory 1209:0001 under the simulator")
        }
        let (sync, cSync) = try await interleaved(
            { try await Self.echoSync(manager, accessory, data, chunk: chunk) },
            { try cEcho(["--sync", "--size", "\(size)", "--chunk", "\(chunk)"]) })
        let (async4, cAsync4) = try await interleaved(
            { try await Self.echoAsync(manager, accessory, data, depth: 4, chunk: chunk) },
            { try cEcho(["--async", "4", "--size", "\(size)", "--chunk", "\(chunk)"]) })
        let small = Self.randomBytes(8 * roundTrips)
        var tinies: [Sample] = []
        var calls: [Sample] = []
        var cTinies: [Sample] = []
        for round in 0..<max(runs, 1) {
            let ((tiny, call), cTiny) = try await Self.inTurn(
                round: round,
                { (try await Self.echoSync(manager, accessory, small, chunk: 8), try await Self.echoCalls(manager, accessory, small, chunk: 8)) },
                { try cEcho(["--sync", "--size", "\(8 * roundTrips)", "--transfer-size", "8"]) })
            tinies.append(tiny)
            calls.append(call)
            cTinies.append(cTiny)
        }
        let (tiny, call, cTiny) = (Self.median(tinies), Self.median(calls), Self.median(cTinies))
        let (writes16, writes64) = try await interleaved(
            { try await Self.echoWrites(manager, accessory, data, writeSize: 16 * 1024) },
            { try await Self.echoWrites(manager, accessory, data, writeSize: 64 * 1024) })

        // (e) capture on and off: a second manager records every transfer; both managers live
        // through every round, so each round pays for the same idle manager beside it.
        let capturePath = dir.appendingPathComponent("session-bench-capture.pcapng").path
        defer { try? FileManager.default.removeItem(atPath: capturePath) }
        let capturing = try await AccessoryManager(configuration: .init(capturePath: capturePath))
        guard let recorded = await capturing.connectedAccessories.first(where: { $0.descriptor.vendor == 0x1209 && $0.descriptor.product == 0x0001 }) else {
            await capturing.shutdown()
            await manager.shutdown()
            throw Failure(description: "no accessory 1209:0001 for the capturing manager")
        }
        var captureRounds: [(on: Sample, off: Sample)] = []
        var captureBytes = 0
        func captureSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: capturePath)[.size] as? NSNumber)?.intValue ?? 0 }
        for round in 0..<max(runs, 1) {
            let (on, off) = try await Self.inTurn(
                round: round,
                {
                    // The recorder keeps its file open (and appends), so each round's share is the growth.
                    let before = captureSize()
                    defer { captureBytes = captureSize() - before }
                    return try await Self.echoAsync(capturing, recorded, data, depth: 4, chunk: chunk)
                },
                { try await Self.echoAsync(manager, accessory, data, depth: 4, chunk: chunk) })
            captureRounds.append((on, off))
        }
        await capturing.shutdown()
        await manager.shutdown()
        let (captureOn, captureOff) = (Self.median(captureRounds.map(\.on)), Self.median(captureRounds.map(\.off)))

        var rows: [String] = []
        rows.append("### (a) Echo throughput, in process, \(megabytes) MiB in 64 KiB transfers (median of \(runs))")
        rows.append("")
        rows.append("| mode | client | seconds | MB/s | CPU s | throughput ÷ C | CPU ÷ C |")
        rows.append("|---|---|---:|---:|---:|---:|---:|")
        for (mode, ours, c, cName) in [
            ("sync (1 in flight)", sync, cSync, "C bulk_echo --sync"), ("async, depth 4", async4, cAsync4, "C bulk_echo --async 4"),
        ] {
            rows.append(Self.row(mode, "AccessorySession", ours, against: c))
            rows.append(Self.row(mode, cName, c, against: c))
        }
        rows.append("")
        rows.append("### (b) Whole processes, \(pipeMegabytes) MiB echoed, alternating (median of \(pipeRuns))")
        rows.append("")
        rows.append("| command | wall s | MB/s | CPU s | peak RSS MiB | throughput ÷ C | CPU ÷ C |")
        rows.append("|---|---:|---:|---:|---:|---:|---:|")
        let openCommand = "accessoryctl open --idle-timeout \(idleTimeout) < file > file"
        rows.append(Self.processRow(openCommand, ctl, against: cProcess))
        var quiet = ctl
        quiet.seconds -= idleTimeout
        rows.append(Self.processRow("the same, less its \(idleTimeout) s idle wait", quiet, against: cProcess))
        rows.append(Self.processRow("C bulk_echo --async 4 --chunk \(chunk)", cProcess, against: cProcess))
        rows.append("")
        rows.append("Rounds, in order (accessoryctl open's wall time includes its idle wait):")
        rows.append("")
        rows += Self.roundRows(pipeRounds.map { ($0.ours, $0.c) }, "open", "C", ratios: ("throughput ÷ C", "CPU ÷ C"))
        let pipeThroughput = ctl.megabytesPerSecond / cProcess.megabytesPerSecond
        let pipeQuiet = quiet.megabytesPerSecond / cProcess.megabytesPerSecond
        rows.append("")
        rows.append(String(
            format: "Target (issue 27 c): `open` ≥ 0.95 × C's throughput: %@ (%.2f; %.2f less the idle wait); CPU %.2f × C's.",
            pipeThroughput >= 0.95 ? "met" : "NOT met", pipeThroughput, pipeQuiet, ctl.cpu / cProcess.cpu))
        rows.append("")
        rows.append("### (c) Per-transfer overhead: \(roundTrips) round trips of 8 bytes, one at a time (median of \(runs))")
        rows.append("")
        rows.append("| client | µs per round trip | CPU µs per round trip | time ÷ C | CPU ÷ C |")
        rows.append("|---|---:|---:|---:|---:|")
        for (name, s) in [
            ("AccessorySession write + read (streams)", tiny), ("AccessorySession transferOut + transferIn (calls)", call),
            ("C bulk_echo --sync --transfer-size 8", cTiny),
        ] {
            rows.append(String(
                format: "| %@ | %.1f | %.1f | %.2f | %.2f |", name, s.microsecondsPerTransfer, s.cpuMicrosecondsPerTransfer,
                s.seconds / cTiny.seconds, s.cpu / cTiny.cpu))
        }
        let callCPU = call.cpu / cTiny.cpu
        rows.append("")
        rows.append(String(
            format: "Target (issue 27 b): a one-transfer call's round trip ≤ 1.10 × C's CPU: %@ (%.2f; time %.2f × C's).",
            callCPU <= 1.10 ? "met" : "NOT met", callCPU, call.seconds / cTiny.seconds))
        rows.append("")
        rows.append("### (d) Write size: \(megabytes) MiB echoed in writes of 16 KiB and of 64 KiB, default options (median of \(runs))")
        rows.append("")
        rows.append("| writes | seconds | MB/s | CPU s | throughput ÷ 64 KiB writes |")
        rows.append("|---|---:|---:|---:|---:|")
        for (name, s) in [("16 KiB", writes16), ("64 KiB", writes64)] {
            rows.append(String(
                format: "| %@ | %.3f | %.1f | %.3f | %.2f |", name, s.seconds, s.megabytesPerSecond, s.cpu,
                s.megabytesPerSecond / writes64.megabytesPerSecond))
        }
        let smallRatio = writes16.megabytesPerSecond / writes64.megabytesPerSecond
        rows.append("")
        rows.append(String(format: "Target (d): 16 KiB writes ≥ 0.9 × 64 KiB writes: %@ (%.2f).", smallRatio >= 0.9 ? "met" : "NOT met", smallRatio))
        rows.append("")
        rows.append("### (e) Capture cost: \(megabytes) MiB echoed at async depth 4, capture on and off, alternating (median of \(runs))")
        rows.append("")
        rows.append(String(format: "The capture grew by %.1f MiB in the last round (pcapng, one `S` and one `C` record per transfer).", Double(captureBytes) / 1_048_576))
        rows.append("")
        rows.append("| capture | seconds | MB/s | CPU s | throughput ÷ off | CPU ÷ off |")
        rows.append("|---|---:|---:|---:|---:|---:|")
        for (name, s) in [("on (capturePath in the temp dir)", captureOn), ("off", captureOff)] {
            rows.append(String(
                format: "| %@ | %.3f | %.1f | %.3f | %.2f | %.2f |", name, s.seconds, s.megabytesPerSecond, s.cpu,
                s.megabytesPerSecond / captureOff.megabytesPerSecond, s.cpu / captureOff.cpu))
        }
        rows.append("")
        rows += Self.roundRows(captureRounds.map { ($0.on, $0.off) }, "on", "off", ratios: ("on ÷ off", "CPU on ÷ off"))
        let captureRatio = captureOn.megabytesPerSecond / captureOff.megabytesPerSecond
        rows.append("")
        rows.append(String(
            format: "Target (issue 27 a): capture costs ≤ 5%% of throughput (on ≥ 0.95 × off): %@ (%.2f; CPU %.2f × off).",
            captureRatio >= 0.95 ? "met" : "NOT met", captureRatio, captureOn.cpu / captureOff.cpu))
        rows.append("")
        let throughput = [sync.megabytesPerSecond / cSync.megabytesPerSecond, async4.megabytesPerSecond / cAsync4.megabytesPerSecond]
        let cpu = [sync.cpu / cSync.cpu, async4.cpu / cAsync4.cpu]
        rows.append(String(
            format: "Targets (a): throughput ≥ 0.95 × C: %@ (%.2f, %.2f); CPU ≤ 1.10 × C: %@ (%.2f, %.2f).",
            throughput.allSatisfy { $0 >= 0.95 } ? "met" : "NOT met", throughput[0], throughput[1],
            cpu.allSatisfy { $0 <= 1.10 } ? "met" : "NOT met", cpu[0], cpu[1]))
        return rows
    }

    /// One in-process echo, `runs` times, for a profiler to watch.
    func profileOnly(_ what: String, size: Int, chunk: Int) async throws -> [String] {
        let capturePath = NSTemporaryDirectory() + "/session-profile-capture.pcapng"
        defer { try? FileManager.default.removeItem(atPath: capturePath) }
        let manager = try await AccessoryManager(configuration: .init(capturePath: what == "capture" ? capturePath : nil))
        guard let accessory = await manager.connectedAccessories.first(where: { $0.descriptor.vendor == 0x1209 && $0.descriptor.product == 0x0001 }) else {
            await manager.shutdown()
            throw Failure(description: "no accessory 1209:0001 under the simulator")
        }
        let data = Self.randomBytes(what == "async" || what == "capture" ? size : 8 * roundTrips)
        var rows: [String] = []
        for _ in 0..<max(runs, 1) {
            let s: Sample =
                switch what {
                case "calls": try await Self.echoCalls(manager, accessory, data, chunk: 8)
                case "streams": try await Self.echoSync(manager, accessory, data, chunk: 8)
                case "async", "capture": try await Self.echoAsync(manager, accessory, data, depth: 4, chunk: chunk)
                default: throw Failure(description: "--profile takes calls, streams, async or capture")
                }
            rows.append(String(format: "%@: %.3f s, %.3f CPU s, %.1f CPU µs per transfer", what, s.seconds, s.cpu, s.cpuMicrosecondsPerTransfer))
        }
        await manager.shutdown()
        return rows
    }

    // MARK: Processes

    /// Runs the C client and reads the echo loop's own figures from its output line.
    func cEcho(_ arguments: [String]) throws -> Sample {
        let out = NSTemporaryDirectory() + "/bulk_echo-\(getpid()).out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let m = Self.spawn([cClient] + arguments, stdin: "/dev/null", stdout: out)
        let line = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        var fields: [String: String] = [:]
        for word in line.split(whereSeparator: \.isWhitespace) {
            let kv = word.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        guard m.status == 0, let bytes = fields["bytes"].flatMap(Int.init), let seconds = fields["seconds"].flatMap(Double.init),
            let cpu = fields["cpu"].flatMap(Double.init), let transfers = fields["transfers"].flatMap(Int.init)
        else { throw Failure(description: "bulk_echo \(arguments.joined(separator: " ")) failed (exit \(m.status)): \(line)") }
        return Sample(bytes: bytes, seconds: seconds, cpu: cpu, transfers: transfers, maxRSSKiB: m.maxRSSKiB)
    }

    /// Runs `argv` with standard input and output redirected to files; measures the whole
    /// process (wall, CPU of all its threads, peak RSS).
    static func spawn(_ argv: [String], stdin: String, stdout: String) -> ProcessRunner.Measurement {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        let env = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let start = ProcessRunner.monotonicSeconds()
        guard posix_spawnp(&pid, argv[0], &actions, nil, &cargs, env) == 0 else {
            return ProcessRunner.Measurement(wall: 0, cpu: 0, maxRSSKiB: 0, status: 127)
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let wall = ProcessRunner.monotonicSeconds() - start
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ProcessRunner.Measurement(wall: wall, cpu: cpu, maxRSSKiB: usage.ru_maxrss, status: code)
    }

    // MARK: Helpers

    /// Runs `a` and `b` once each for round `round`: `a` first in even rounds, `b` first in
    /// odd ones. What runs second follows what the first left behind (dirty pages being
    /// written back, a warm cache, a busy simulator), so neither side always gets it.
    static func inTurn<A, B>(round: Int, _ a: () async throws -> A, _ b: () async throws -> B) async throws -> (A, B) {
        if round % 2 == 0 {
            let first = try await a()
            return (first, try await b())
        }
        let first = try await b()
        return (try await a(), first)
    }

    /// Runs `ours` and `theirs` in turn (``inTurn(round:_:_:)``), `runs` rounds, and returns
    /// the median (by time) of each.
    func interleaved(_ ours: () async throws -> Sample, _ theirs: () async throws -> Sample) async throws -> (Sample, Sample) {
        try await interleaved(rounds: runs, ours, theirs)
    }

    /// Runs `ours` and `theirs` in turn (``inTurn(round:_:_:)``), `rounds` rounds, telling
    /// `record` each pair, and returns the median of each.
    func interleaved(
        rounds: Int, record: (Sample, Sample) -> Void = { _, _ in }, _ ours: () async throws -> Sample, _ theirs: () async throws -> Sample
    ) async throws -> (Sample, Sample) {
        var a: [Sample] = []
        var b: [Sample] = []
        for round in 0..<max(rounds, 1) {
            let (x, y) = try await Self.inTurn(round: round, ours, theirs)
            a.append(x)
            b.append(y)
            record(x, y)
        }
        return (Self.median(a), Self.median(b))
    }

    /// The median by time; for an even count, the mean of the middle two (seconds by
    /// seconds, CPU by CPU, the higher peak RSS).
    static func median(_ samples: [Sample]) -> Sample {
        let byTime = samples.sorted { $0.seconds < $1.seconds }
        guard samples.count % 2 == 0, samples.count >= 2 else { return byTime[samples.count / 2] }
        let (low, high) = (byTime[samples.count / 2 - 1], byTime[samples.count / 2])
        let byCPU = samples.map(\.cpu).sorted()
        var m = high
        m.seconds = (low.seconds + high.seconds) / 2
        m.cpu = (byCPU[samples.count / 2 - 1] + byCPU[samples.count / 2]) / 2
        m.maxRSSKiB = max(low.maxRSSKiB ?? 0, high.maxRSSKiB ?? 0)
        return m
    }

    /// Whether `chunk` equals `data` at `offset` (memcmp, as the C client checks).
    static func same(_ chunk: [UInt8], _ data: [UInt8], at offset: Int) -> Bool {
        chunk.withUnsafeBytes { c in
            data.withUnsafeBytes { d in chunk.isEmpty || memcmp(c.baseAddress!, d.baseAddress! + offset, chunk.count) == 0 }
        }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var rng = SplitMix64(seed: UInt64(count))
        return rng.bytes(count)
    }

    static func row(_ mode: String, _ client: String, _ s: Sample, against c: Sample) -> String {
        String(
            format: "| %@ | %@ | %.3f | %.1f | %.3f | %.2f | %.2f |", mode, client, s.seconds, s.megabytesPerSecond, s.cpu,
            s.megabytesPerSecond / c.megabytesPerSecond, s.cpu / c.cpu)
    }

    /// A table of paired rounds in order: each side's MB/s and CPU seconds, and their ratios.
    static func roundRows(_ rounds: [(Sample, Sample)], _ a: String, _ b: String, ratios: (throughput: String, cpu: String)) -> [String] {
        var rows = [
            "| round | \(a) MB/s | \(b) MB/s | \(ratios.throughput) | \(a) CPU s | \(b) CPU s | \(ratios.cpu) |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for (i, (x, y)) in rounds.enumerated() {
            rows.append(String(
                format: "| %d | %.1f | %.1f | %.2f | %.3f | %.3f | %.2f |", i + 1, x.megabytesPerSecond, y.megabytesPerSecond,
                x.megabytesPerSecond / y.megabytesPerSecond, x.cpu, y.cpu, x.cpu / y.cpu))
        }
        return rows
    }

    static func processRow(_ command: String, _ s: Sample, against c: Sample) -> String {
        String(
            format: "| %@ | %.3f | %.1f | %.3f | %.1f | %.2f | %.2f |", command, s.seconds, s.megabytesPerSecond, s.cpu,
            Double(s.maxRSSKiB ?? 0) / 1024, s.megabytesPerSecond / c.megabytesPerSecond, s.cpu / c.cpu)
    }
}
