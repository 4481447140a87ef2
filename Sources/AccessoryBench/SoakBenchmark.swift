import AccessoryCore
import AccessoryTraces
import AccessoryKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `accessory-bench soak` (under accessory-sim): plug, connect, open a session, echo, close,
/// unplug and disconnect, `cycles` times through one ``AccessoryManager``.
///
/// Each cycle plugs a new loopback accessory (1209:00c1) through the simulator's control
/// socket, waits for its `.connected` (a connection ID above every earlier one), echoes a
/// seeded payload of 64–1024 bytes through a session and checks it byte for byte, closes the
/// session, asks the simulator whether the interface was released, unplugs, and waits for
/// `.disconnected(_, .unplugged)` of the same ID. Every wait gives up after `timeout`. Any
/// other event, error or timeout fails the run, except the manager's known reconcile races
/// (see ``Anomalies``), which `tolerateRaces` counts and reports instead.
///
/// After `warmUp` cycles (reported apart), it samples this process from /proc/self (open
/// file descriptors, threads, VmRSS, VmHWM) and then again every `sampleEvery` cycles. The
/// verdict: file descriptors equal to the post-warm-up sample at every sample, threads
/// within ±`threadSlack` of it (the Swift concurrency pool may add a worker late), and RSS
/// growth from it to the last sample under `rssBoundMiB`.
struct SoakBenchmark {
    var cycles: Int
    var sampleEvery: Int
    var warmUp: Int
    /// Allowed RSS growth from the post-warm-up sample to the last, MiB.
    var rssBoundMiB: Int
    /// Count the manager's known reconcile races (see ``Anomalies``) instead of failing.
    var tolerateRaces = false
    var threadSlack = 2
    var seed: UInt64 = 0x50A4
    var timeout: Duration = .seconds(10)
    var spec = "1209:00c1:SOAK:org.example.loopback"
    var protocolName = "org.example.loopback"

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// One look at a process, from /proc.
    struct Sample {
        var cycles: Int
        var seconds: Double
        /// Open file descriptors, and what each points at.
        var fds: [Int32: String]
        var threads: Int
        /// The threads' names (`/proc/self/task/*/comm`), sorted.
        var threadNames: [String]
        var rssKiB: Int
        var hwmKiB: Int
        /// Bytes allocated and not freed, when a sanitizer runtime counts them (ASan, LSan).
        var liveHeapBytes: Int?
        /// The simulator's RSS, when the parent process is accessory-sim.
        var simulatorRSSKiB: Int?
        var simulatorFDs: Int?
    }

    /// What the run keeps between cycles.
    struct State {
        var rng: SplitMix64
        var lastID = ConnectionID.none
        var slowest = (seconds: 0.0, cycle: 0)
        var bytesEchoed = 0
        /// The last few instances unplugged, as `BUS:ADDRESS`.
        var unplugged: [String] = []
        /// Phantoms still connected: ID → `BUS:ADDRESS`.
        var phantoms: [ConnectionID: String] = [:]
        var anomalies = Anomalies()
    }

    /// Notifications the manager should not send, counted instead of failing the run when
    /// `tolerateRaces` is set. Both come from one window: the simulator (as the kernel)
    /// sends a "remove" uevent before it deletes the device's sysfs directory, and a
    /// reconcile's sysfs scan can fall between the two, or between the deletion and the
    /// manager handling the event.
    struct Anomalies {
        /// `.connected` of an instance already unplugged: the scan still listed it after
        /// its remove event was handled. Each is later evicted as a ghost.
        var phantoms = 0
        /// `.disconnected(_, .ghostEvicted(.absentFromSnapshot))` instead of `.unplugged`: the
        /// scan missed the instance before its remove event was handled.
        var unplugsReportedAsGhosts = 0
        var total: Int { phantoms + unplugsReportedAsGhosts }
    }

    /// Runs the soak and prints its report as it goes; returns whether the verdict passed.
    func run() async throws -> Bool {
        guard SimulatorControl.isActive else {
            throw Failure(description: "run it under accessory-sim: accessory-sim -- accessory-bench soak")
        }
        let manager = try await AccessoryManager(configuration: .init(reconcileInterval: .seconds(1)))
        let events = await manager.events(includingCurrent: false)
        if let present = await manager.connectedAccessories.first {
            await manager.shutdown()
            throw Failure(description: "the simulator already holds accessory \(present.descriptor.vendorProduct); run the soak on an empty one")
        }
        var state = State(rng: SplitMix64(seed: seed))
        let start = Self.sample(cycles: 0, seconds: 0)

        let w0 = ProcessRunner.monotonicSeconds()
        for i in 0..<warmUp { try await cycle(-warmUp + i, manager, events, &state) }
        let warmUpSeconds = ProcessRunner.monotonicSeconds() - w0
        emit("### Soak: \(cycles) plug/session/unplug cycles, one AccessoryManager (reconcile every 1 s)")
        emit("")
        emit(String(
            format: "Warm-up: %d cycles in %.2f s (%.1f cycles/s); before it: %d fds, %d threads, RSS %.1f MiB.",
            warmUp, warmUpSeconds, Double(warmUp) / max(warmUpSeconds, 1e-9), start.fds.count, start.threads,
            Double(start.rssKiB) / 1024))
        emit("")
        emit("| cycles | elapsed s | cycles/s (since last row) | fds | threads | RSS MiB | peak RSS MiB | live heap MiB (sanitizer) | simulator RSS MiB | simulator fds |")
        emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

        let t0 = ProcessRunner.monotonicSeconds()
        var samples = [Self.sample(cycles: 0, seconds: 0)]
        emit(row(samples[0], previous: nil))
        for i in 0..<cycles {
            try await cycle(i, manager, events, &state)
            if (i + 1) % max(sampleEvery, 1) == 0 || i + 1 == cycles {
                var s = Self.sample(cycles: i + 1, seconds: ProcessRunner.monotonicSeconds() - t0)
                // A device node closes a moment after its session (off the event thread), so a
                // sample can catch one in passing. A leak stays: look again, for up to 200 ms,
                // before a different count is recorded.
                var looks = 0
                while s.fds.count != samples[0].fds.count, looks < 20 {
                    try await Task.sleep(for: .milliseconds(10))
                    s = Self.sample(cycles: i + 1, seconds: ProcessRunner.monotonicSeconds() - t0)
                    looks += 1
                }
                emit(row(s, previous: samples.last))
                samples.append(s)
            }
        }
        // A phantom is evicted by the next reconcile that misses it (at the latest the periodic one).
        let drain = ContinuousClock.now + timeout
        while !state.phantoms.isEmpty {
            try absorb(try await Self.next(events, until: drain, waitingFor: "the eviction of phantoms \(state.phantoms)"), &state, "end", expecting: "a phantom's eviction")
        }
        let leftOver = await (manager.connectedAccessories.count, manager.openSessions.count)
        await manager.shutdown()

        let base = samples[0], last = samples[samples.count - 1]
        emit("")
        emit(String(
            format: "%d cycles in %.1f s (%.1f cycles/s), %d bytes echoed and verified, last connection ID %@; slowest cycle %.1f ms (cycle %d).",
            cycles, last.seconds, Double(cycles) / max(last.seconds, 1e-9), state.bytesEchoed, state.lastID.description,
            state.slowest.seconds * 1000, state.slowest.cycle))
        let (verdict, lines) = verdict(samples, state: state, leftOver: leftOver)
        for line in lines { emit(line) }
        if base.fds != last.fds {
            emit("File descriptors at the post-warm-up sample and at the last, where they differ:")
            for fd in Set(base.fds.keys).union(last.fds.keys).sorted() where base.fds[fd] != last.fds[fd] {
                emit("  fd \(fd): \(base.fds[fd] ?? "-") → \(last.fds[fd] ?? "-")")
            }
        }
        if base.threadNames != last.threadNames {
            emit("Threads at the post-warm-up sample: \(base.threadNames.joined(separator: ", ")); at the last: \(last.threadNames.joined(separator: ", ")).")
        }
        return verdict
    }

    // MARK: One cycle

    /// Plug, `.connected`, session echo, close, unplug, `.disconnected`. `index` is negative
    /// during the warm-up.
    func cycle(_ index: Int, _ manager: AccessoryManager, _ events: AsyncStream<AccessoryEvent>, _ state: inout State) async throws {
        let t0 = ProcessRunner.monotonicSeconds()
        let label = index < 0 ? "warm-up cycle \(index + warmUp + 1)" : "cycle \(index + 1)"
        func fail(_ what: String) -> Failure { Failure(description: "\(label): \(what)") }

        let reply = try SimulatorControl.send("plug \(spec)")
        guard let (bus, address) = SimulatorControl.instance(reply) else { throw fail("cannot parse the reply to plug: \(reply)") }
        let key = "\(bus):\(address)"

        var connected: Accessory?
        let arrival = ContinuousClock.now + timeout
        while connected == nil {
            let event = try await Self.next(events, until: arrival, waitingFor: "\(label): .connected of \(key)")
            guard case .connected(let a) = event, a.descriptor.bus == bus, a.descriptor.address == address else {
                try absorb(event, &state, label, expecting: ".connected of \(key)")
                continue
            }
            guard a.descriptor.vendor == 0x1209, a.descriptor.product == 0x00c1 else {
                throw fail(".connected of \(key) is \(a.descriptor.vendorProduct), not 1209:00c1")
            }
            guard a.connectionID > state.lastID else {
                throw fail("connection ID \(a.connectionID) of \(key) is not above the previous one, \(state.lastID)")
            }
            state.lastID = a.connectionID
            connected = a
        }
        let accessory = connected!

        let options = AccessorySession.Options(readTimeout: timeout, writeTimeout: timeout)
        let session = try await manager.openSession(to: accessory, protocol: protocolName, name: "soak-\(index)", options: options)
        let payload = Self.payload(&state.rng)
        do {
            try await session.write(payload)
            var back: [UInt8] = []
            back.reserveCapacity(payload.count)
            while back.count < payload.count {
                guard let chunk = try await session.read() else { throw fail("the session ended after \(back.count) of \(payload.count) bytes") }
                back += chunk
            }
            guard back == payload else {
                let at = (0..<min(back.count, payload.count)).first { back[$0] != payload[$0] } ?? min(back.count, payload.count)
                throw fail("echo of \(payload.count) bytes came back as \(back.count) bytes, first difference at byte \(at)")
            }
        } catch {
            await session.close()
            throw error
        }
        await session.close()
        state.bytesEchoed += payload.count
        guard session.isClosed else { throw fail("\(session) is not closed after close()") }
        guard await manager.openSessions.isEmpty else { throw fail("the manager still lists a session after close()") }

        // The simulator's view: the interface is released and no URB is left pending.
        let log = try Self.fields(SimulatorControl.send("ioctl-log \(key)"))
        guard log["claimed"] == "-", log["pending-in"] == "0", log["pending-out"] == "0", log["claims"] == log["released"] else {
            throw fail("after close, the simulator reports claimed=\(log["claimed"] ?? "?") claims=\(log["claims"] ?? "?") released=\(log["released"] ?? "?") pending-in=\(log["pending-in"] ?? "?") pending-out=\(log["pending-out"] ?? "?")")
        }

        _ = try SimulatorControl.send("unplug \(key)")
        state.unplugged = Array((state.unplugged + [key]).suffix(8))
        let departure = ContinuousClock.now + timeout
        while true {
            let event = try await Self.next(events, until: departure, waitingFor: "\(label): .disconnected of \(key)")
            guard case .disconnected(let a, let reason) = event, a.connectionID == accessory.connectionID else {
                try absorb(event, &state, label, expecting: ".disconnected(\(accessory.connectionID), unplugged) of \(key)")
                continue
            }
            if reason == .unplugged { break }
            guard reason == .ghostEvicted(.absentFromSnapshot), tolerateRaces else {
                throw fail("expected .disconnected(\(accessory.connectionID), unplugged) of \(key), got .disconnected(_, \(reason)) (a reconcile scanned sysfs after the device's directory was removed but before its remove event was handled)")
            }
            state.anomalies.unplugsReportedAsGhosts += 1
            break
        }
        let seconds = ProcessRunner.monotonicSeconds() - t0
        if index >= 0, seconds > state.slowest.seconds { state.slowest = (seconds, index + 1) }
    }

    /// Accounts for a notification that is not the one awaited: a phantom `.connected` of an
    /// instance unplugged in an earlier cycle, or a phantom's `.disconnected`, when races are
    /// tolerated; anything else fails the run.
    func absorb(_ event: AccessoryEvent, _ state: inout State, _ label: String, expecting what: String) throws {
        switch event {
        case .connected(let a):
            let key = "\(a.descriptor.bus):\(a.descriptor.address.map(String.init) ?? "?")"
            guard a.connectionID > state.lastID else {
                throw Failure(description: "\(label): connection ID \(a.connectionID) of \(key) is not above the previous one, \(state.lastID)")
            }
            state.lastID = a.connectionID
            guard state.unplugged.contains(key), tolerateRaces else {
                let why = state.unplugged.contains(key)
                    ? " (a phantom: \(key) was unplugged in an earlier cycle, and a reconcile's sysfs scan still listed it after its remove event was handled)"
                    : ""
                throw Failure(description: "\(label): expected \(what), got .connected(\(a.connectionID)) of \(key)\(why)")
            }
            state.phantoms[a.connectionID] = key
            state.anomalies.phantoms += 1
        case .disconnected(let a, let reason):
            guard state.phantoms.removeValue(forKey: a.connectionID) != nil else {
                throw Failure(description: "\(label): expected \(what), got .disconnected(\(a.connectionID), \(reason))")
            }
        }
    }

    /// The stream's next notification, or a failure at `deadline`.
    ///
    /// On a timeout the waiting iteration is cancelled, which ends the stream; the run fails
    /// then anyway.
    static func next(_ events: AsyncStream<AccessoryEvent>, until deadline: ContinuousClock.Instant, waitingFor what: String) async throws -> AccessoryEvent {
        try await withThrowingTaskGroup(of: AccessoryEvent?.self) { group in
            group.addTask {
                var iterator = events.makeAsyncIterator()
                return await iterator.next()
            }
            group.addTask {
                try await Task.sleep(until: deadline)
                throw Failure(description: "timed out waiting for \(what)")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let event = first else {
                throw Failure(description: "the event stream ended while waiting for \(what)")
            }
            return event
        }
    }

    /// 64 to 1024 seeded random bytes.
    static func payload(_ rng: inout SplitMix64) -> [UInt8] {
        let count = 64 + Int(rng.next() % 961)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// `ok a=1 b=2` → ["a": "1", "b": "2"].
    static func fields(_ reply: String) -> [String: String] {
        var fields: [String: String] = [:]
        for word in reply.split(whereSeparator: \.isWhitespace) {
            let kv = word.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        return fields
    }

    // MARK: Verdict and report

    func verdict(_ samples: [Sample], state: State, leftOver: (accessories: Int, sessions: Int)) -> (Bool, [String]) {
        let base = samples[0], last = samples[samples.count - 1]
        var passed = true
        var lines = ["", "Verdict (against the post-warm-up sample, cycle 0):"]
        let fdOff = samples.filter { $0.fds.count != base.fds.count }
        if fdOff.isEmpty {
            lines.append("- fds: \(base.fds.count) at every sample: flat.")
        } else {
            passed = false
            lines.append("- fds: GREW: \(base.fds.count) → \(last.fds.count) (\(signed(last.fds.count - base.fds.count))); differs at cycles \(fdOff.map { String($0.cycles) }.joined(separator: ", ")).")
        }
        let threads = samples.map(\.threads)
        let (lo, hi) = (threads.min()!, threads.max()!)
        if lo == base.threads && hi == base.threads {
            lines.append("- threads: \(base.threads) at every sample: flat.")
        } else if hi - base.threads <= threadSlack && base.threads - lo <= threadSlack {
            lines.append("- threads: \(base.threads) → \(last.threads) (range \(lo)–\(hi)): NOT exactly flat, within the ±\(threadSlack) allowed for the Swift concurrency pool (on Linux, libdispatch's root-queue workers, added when workers block).")
        } else {
            passed = false
            lines.append("- threads: GREW: \(base.threads) → \(last.threads) (range \(lo)–\(hi), more than ±\(threadSlack)).")
        }
        let growthKiB = last.rssKiB - base.rssKiB
        let growth = String(format: "%+.2f MiB (%.1f → %.1f MiB; peak %.1f MiB)", Double(growthKiB) / 1024, Double(base.rssKiB) / 1024,
                            Double(last.rssKiB) / 1024, Double(last.hwmKiB) / 1024)
        if growthKiB < rssBoundMiB * 1024 {
            lines.append("- RSS: \(growth), under the \(rssBoundMiB) MiB bound.")
        } else {
            passed = false
            lines.append("- RSS: GREW \(growth), over the \(rssBoundMiB) MiB bound.")
        }
        let heap = samples.compactMap(\.liveHeapBytes).map { Double($0) / 1_048_576 }
        if heap.count == samples.count, let a = heap.first, let b = heap.last {
            lines.append(String(
                format: "- live heap (the sanitizer's count, informational): %.2f → %.2f MiB (%+.1f KiB), %.2f–%.2f MiB over the samples after cycle 0.",
                a, b, (b - a) * 1024, heap.dropFirst().min() ?? b, heap.dropFirst().max() ?? b))
        }
        if let a = base.simulatorRSSKiB, let b = last.simulatorRSSKiB, let fa = base.simulatorFDs, let fb = last.simulatorFDs {
            lines.append(String(format: "- simulator (informational): RSS %+.2f MiB, fds %d → %d.", Double(b - a) / 1024, fa, fb))
        }
        let a = state.anomalies
        if a.total > 0 {
            lines.append("- events: \(a.total) anomalies TOLERATED (--tolerate-races): \(a.phantoms) phantom .connected of an unplugged instance, \(a.unplugsReportedAsGhosts) unplugs reported as ghost-evicted; without the flag the run fails on the first.")
        } else {
            lines.append("- events: exactly one .connected and one .disconnected(unplugged) per cycle, IDs strictly increasing.")
        }
        if leftOver != (0, 0) {
            passed = false
            lines.append("- the manager still lists \(leftOver.accessories) accessories and \(leftOver.sessions) sessions after the last cycle.")
        }
        lines.append(passed ? "PASSED" : "FAILED")
        return (passed, lines)
    }

    func row(_ s: Sample, previous: Sample?) -> String {
        let rate = previous.map { p in s.seconds > p.seconds ? String(format: "%.1f", Double(s.cycles - p.cycles) / (s.seconds - p.seconds)) : "–" } ?? "–"
        return String(
            format: "| %d | %.1f | %@ | %d | %d | %.1f | %.1f | %@ | %@ | %@ |", s.cycles, s.seconds, rate, s.fds.count, s.threads,
            Double(s.rssKiB) / 1024, Double(s.hwmKiB) / 1024, s.liveHeapBytes.map { String(format: "%.2f", Double($0) / 1_048_576) } ?? "–",
            s.simulatorRSSKiB.map { String(format: "%.1f", Double($0) / 1024) } ?? "–",
            s.simulatorFDs.map(String.init) ?? "–")
    }

    func signed(_ n: Int) -> String { n >= 0 ? "+\(n)" : "\(n)" }

    /// Prints a line at once, even into a pipe.
    func emit(_ line: String) {
        print(line)
        fflush(nil)  // every output stream; naming `stdout` is not concurrency-safe in Swift 6
    }

    // MARK: /proc

    /// This process now, and the simulator when it is the parent.
    static func sample(cycles: Int, seconds: Double) -> Sample {
        let status = statusFields("/proc/self/status")
        var s = Sample(
            cycles: cycles, seconds: seconds, fds: openFiles("self") ?? [:], threads: status["Threads"] ?? -1,
            threadNames: threadNames(), rssKiB: status["VmRSS"] ?? -1, hwmKiB: status["VmHWM"] ?? -1,
            liveHeapBytes: sanitizerAllocatedBytes.map { Int($0()) })
        let parent = String(getppid())
        if readLink("/proc/\(parent)/exe")?.hasSuffix("/accessory-sim") == true {
            s.simulatorRSSKiB = statusFields("/proc/\(parent)/status")["VmRSS"]
            s.simulatorFDs = openFiles(parent)?.count
        }
        return s
    }

    /// The sanitizer runtime's count of bytes allocated and not yet freed
    /// (`__sanitizer_get_current_allocated_bytes`), or `nil` without a sanitizer. Under ASan it
    /// leaves out the quarantine, so unlike RSS it grows only when live allocations grow.
    static let sanitizerAllocatedBytes: (@convention(c) () -> Int)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "__sanitizer_get_current_allocated_bytes") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) () -> Int).self)
    }()

    /// The open file descriptors of a process and their targets, leaving out the one this
    /// listing uses.
    static func openFiles(_ pid: String) -> [Int32: String]? {
        guard let dir = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(dir) }
        let own = pid == "self" ? dirfd(dir) : -1
        var files: [Int32: String] = [:]
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name), fd != own else { continue }
            files[fd] = readLink("/proc/\(pid)/fd/\(fd)") ?? "?"
        }
        return files
    }

    static func readLink(_ path: String) -> String? {
        var target = [CChar](repeating: 0, count: 4097)
        let n = readlink(path, &target, 4096)
        return n > 0 ? String(decoding: target[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    /// The names of this process's threads, sorted.
    static func threadNames() -> [String] {
        guard let dir = opendir("/proc/self/task") else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard Int(tid) != nil, let name = readSmallFile("/proc/self/task/\(tid)/comm") else { continue }
            names.append(name.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return names.sorted()
    }

    /// The numeric fields of a /proc status file (`Threads:`, `VmRSS:` in kB, …).
    static func statusFields(_ path: String) -> [String: Int] {
        var fields: [String: Int] = [:]
        for line in (readSmallFile(path) ?? "").split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let value = parts[1].split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) }) else { continue }
            fields[String(parts[0])] = value
        }
        return fields
    }

    /// A /proc file, read with plain read(2) so that measuring allocates next to nothing.
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return String(decoding: ProcessRunner.readToEnd(fd), as: UTF8.self)
    }
}
