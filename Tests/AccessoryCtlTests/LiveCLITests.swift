import AccessoryCore
import AccessoryTraces
import AccessoryTestSupport
import Foundation
import Testing

/// The live commands under accessory-sim. They share the simulator, so they run one at a time.
@Suite("accessoryctl live commands (accessory-sim)", .serialized,
       .enabled(if: SimulatorControl.isActive, "needs accessory-sim: run scripts/test"))
struct LiveCLITests {
    static let interval = ["--reconcile-interval", "0.3"]

    @Test("SIGTERM ends watch within 3 s even when nobody reads its output and a storm backs it up")
    func watchEndsWhenItsReaderIsStuck() throws {
        let added = try SimulatorControl.plug("1209:00b1:STUCK").id
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.accessoryctl)
        process.arguments = ["watch", "--json"] + Self.interval
        let stuck = Pipe()  // never read: the pipe fills and the printer blocks in write(2)
        process.standardOutput = stuck
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let words = try SimulatorControl.ctl("storm", added, "1500")
        try #require(words.count >= 3, "\(words)")
        let start = Date()
        kill(process.processIdentifier, SIGTERM)
        pollUntil { !process.isRunning }
        let elapsed = Date().timeIntervalSince(start)
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        #expect(elapsed < 5, "watch took \(elapsed) s to end")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        try SimulatorControl.ctl("unplug", "\(words[1]):\(words[2])")
        _ = stuck
    }

    @Test("watch whose reader falls behind keeps a bounded backlog, says so on stderr, and its lines still add up to the simulator's list")
    func watchResynchronizesASlowReader() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let errURL = dir.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let added = try SimulatorControl.plug("1209:00b3:SLOW").id
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.accessoryctl)
        // -v: the manager logs each connection on stderr as it takes it, whatever the printer does.
        // --batch 0: every instance of the storm is announced (batches would skip most).
        process.arguments = ["watch", "--json", "--backlog", "16", "--batch", "0", "-v"] + Self.interval
        let pipe = Pipe()  // not read until the storm is over: the pipe fills, lines back up
        process.standardOutput = pipe
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // watch prints the accessories present once its monitor runs: read those lines
        // (and keep them), then leave the pipe unread while the storm backs lines up.
        let output = PipeReader(pipe)
        try #require(output.read { $0.contains("\"serial\":\"SLOW\"") }, "watch never listed SLOW")
        let stormed = try SimulatorControl.ctl("storm", added, "600")  // 1,200 lines: about three pipes' worth
        try #require(stormed.count >= 3, "\(stormed)")
        let after = try SimulatorControl.plug("1209:00b4:AFTER").id
        // Nobody reads until watch's manager has taken the whole storm and AFTER, which came
        // after it: its log says so (the printer is still stuck on the full pipe).
        #expect(pollUntil(timeout: .seconds(30)) { ((try? String(contentsOf: errURL, encoding: .utf8)) ?? "").contains("1209:00b4") })
        output.start()
        // watch says it fell behind when its printer reaches the gap.
        #expect(pollUntil(timeout: .seconds(15)) { ((try? String(contentsOf: errURL, encoding: .utf8)) ?? "").contains("fell behind") })
        let listed = try SimulatorControl.list().filter { $0.vendorProduct != "05e3:0608" }.map(\.device.id)
        // Then its lines catch up with the simulator's list.
        #expect(pollUntil(timeout: .seconds(15)) { Set(Self.liveAccessories(output.data).live) == Set(listed) })
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        output.waitForEnd()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        #expect(stderr.contains("output fell behind by more than 16 lines"), "\(stderr)")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)

        // The lines keep the stream's promise, and before shutdown they add up to what is plugged.
        let (live, problems) = Self.liveAccessories(output.data)
        #expect(problems.isEmpty, "\(problems)")
        #expect(Set(live) == Set(listed), "watch: \(live.sorted()), simulator: \(listed.sorted())")
        #expect(listed.contains(after))
        try SimulatorControl.ctl("unplug", after)
        try SimulatorControl.ctl("unplug", "\(stormed[1]):\(stormed[2])")
    }

    /// The `BUS:ADDRESS` of the accessories the complete lines of `watch --json` output hold
    /// connected (a `shutdown` disconnect keeps them), and the lines that break the stream's
    /// promise (an ID connected twice, a disconnect without a connect, a line that is no
    /// JSON notification).
    static func liveAccessories(_ output: Data) -> (live: [String], problems: [String]) {
        var live: [Int: String] = [:]
        var ended = Set<Int>()
        var problems: [String] = []
        let text = String(decoding: output, as: UTF8.self)
        for line in text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1) {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                let id = object["connectionID"] as? Int
            else {
                problems.append("not a notification: \(line)")
                continue
            }
            if object["notification"] as? String == "connected" {
                if live[id] != nil || ended.contains(id) { problems.append("ID \(id) connected twice") }
                live[id] = "\(object["bus"] ?? "?"):\(object["address"] ?? "?")"
            } else {
                if live[id] == nil { problems.append("ID \(id) disconnected without being connected") }
                if object["reason"] as? String != "shutdown" { live[id] = nil; ended.insert(id) }
            }
        }
        return (Array(live.values), problems)
    }

    /// Whether the trace at `path` reads back with a record for which `predicate` holds.
    static func traced(_ path: String, _ predicate: (HotplugEvent) -> Bool) -> Bool {
        ((try? TraceReader.readAll(path: path))?.records.contains { predicate($0.event) }) ?? false
    }

    @Test("watch prints present accessories, then plug and unplug, and exits 0 on SIGINT and SIGTERM",
          arguments: [SIGINT, SIGTERM])
    func watchStopsCleanly(signal: Int32) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let watch = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SN1\"") })
        let added = try SimulatorControl.plug("1209:0007:SN7").id
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SN7\"") })
        try SimulatorControl.ctl("unplug", added)
        #expect(watch.waitForOutput { $0.contains("\"reason\":\"unplugged\"") })
        #expect(watch.stop(with: signal) == 0, "\(watch.stderr)")
        let lines = watch.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("{\"notification\":") })
        #expect(lines.filter { $0.contains("\"reason\":\"shutdown\"") }.count == 2)
    }

    @Test("record leaves a complete, valid trace with every event seen, on SIGINT and SIGTERM",
          arguments: [SIGINT, SIGTERM])
    func recordStopsCleanly(signal: Int32) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("rec.jsonl").path
        let record = try Background(CLI.accessoryctl, ["record", trace] + Self.interval, in: dir)
        // record writes its start-up snapshot once its monitor runs.
        try #require(pollUntil { Self.traced(trace) { if case .snapshot = $0 { true } else { false } } }, "\(record.stderr)")
        let added = try SimulatorControl.plug("1209:0008:SN8").id
        #expect(pollUntil { Self.traced(trace) { $0.descriptor?.serial == "SN8" } })
        try SimulatorControl.ctl("unplug", added)
        #expect(pollUntil { Self.traced(trace) { if case .removed(let r) = $0 { "\(r.bus):\(r.address ?? 0)" == added } else { false } } })
        #expect(record.stop(with: signal) == 0, "\(record.stderr)")
        let contents = try TraceReader.readAll(path: trace)
        #expect(contents.warnings.isEmpty)
        #expect(contents.header?.source == "accessoryctl record")
        let started = contents.header?.started ?? ""
        #expect(started.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil, "started: \(started)")
        let adds = contents.records.filter { if case .added(let d) = $0.event { d.serial == "SN8" } else { false } }
        let removes = contents.records.filter { if case .removed(let r) = $0.event { "\(r.bus):\(r.address ?? 0)" == added } else { false } }
        #expect(adds.count == 1)
        #expect(removes.count == 1)
        #expect(adds.first?.event.descriptor?.manufacturer == "Example")
        #expect(adds.first?.event.descriptor?.protocols == ["org.example.loopback"])
        // The last record is the truth at the end: the two start-up accessories.
        guard case .snapshot(let last) = contents.records.last?.event else {
            Issue.record("the trace does not end with a snapshot")
            return
        }
        #expect(Set(last.compactMap(\.serial)) == ["SN1", "SN2"])
        let replay = try CLI.ctl("replay", trace, "--json")
        #expect(replay.status == 0)
    }

    @Test("After SIGKILL, the trace reads back; a cut last line is only a warning")
    func recordSurvivesSIGKILL() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("killed.jsonl").path
        let record = try Background(CLI.accessoryctl, ["record", trace] + Self.interval, in: dir)
        try #require(pollUntil { Self.traced(trace) { if case .snapshot = $0 { true } else { false } } }, "\(record.stderr)")
        let added = try SimulatorControl.plug("1209:0009:SN9").id
        #expect(pollUntil { Self.traced(trace) { $0.descriptor?.serial == "SN9" } })
        _ = record.stop(with: SIGKILL)
        try SimulatorControl.ctl("unplug", added)
        let whole = try TraceReader.readAll(path: trace)
        #expect(whole.records.count >= 2)
        // Simulate the kill landing mid-write: cut the last line short.
        let data = try Data(contentsOf: URL(fileURLWithPath: trace))
        try data.dropLast(7).write(to: URL(fileURLWithPath: trace))
        let cut = try TraceReader.readAll(path: trace)
        #expect(cut.warnings.count == 1)
        #expect(cut.records.count == whole.records.count - 1)
        let replay = try CLI.ctl("replay", trace)
        #expect(replay.status == 0)
        #expect(replay.stderr.contains("warning:"))
    }

    @Test("watch --json | head -1 ends quietly at the next event, with no crash and no message")
    func watchIntoHead() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = "'\(CLI.accessoryctl)' watch --json --reconcile-interval 0.3 | head -1; echo \"status=${PIPESTATUS[0]}\""
        let shell = try Background("/bin/bash", ["-c", script], in: dir)
        #expect(shell.waitForOutput { $0.contains("notification") }, "head sees the first line at once")
        // The plug comes once head has exited, so that watch's next line finds the pipe closed.
        #expect(pollUntil { !Self.childCommands(of: shell.process.processIdentifier).contains("head") })
        let added = try SimulatorControl.plug("1209:000a:SNA").id
        let status = shell.waitForExit(timeout: 10)
        try SimulatorControl.ctl("unplug", added)
        #expect(status == 0)
        let out = shell.stdout
        #expect(out.contains("status=0") || out.contains("status=141"), "\(out)")
        #expect(shell.stderr.isEmpty, "\(shell.stderr)")
    }

    /// The command names (`comm`) of `pid`'s children.
    static func childCommands(of pid: Int32) -> [String] {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").compactMap {
            try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("Shutdown after a hub left before its child (whose event was lost) does not crash (libusb 1.0.26 workaround)")
    func parentLeftBeforeChild() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let words = try SimulatorControl.ctl("plug-hub", "1-9", "4")
        try #require(words.count >= 3, "\(words)")
        let hub = "\(words[1]):\(words[2])"
        let child = try SimulatorControl.plug("1209:000c:SNC", port: "1-9.4").id
        let watch = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        #expect(watch.waitForOutput { $0.contains("SNC") })
        // The child's remove event is lost; the hub's comes: libusb drops the hub from its
        // list while it still holds the child.
        try SimulatorControl.ctl("unplug", child, "--silent")
        try SimulatorControl.ctl("unplug", hub)
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SNC\",\"reason\"") })
        #expect(watch.stop(with: SIGINT) == 0, "\(watch.stderr)")
    }
}

extension HotplugEvent {
    var descriptor: AccessoryDescriptor? {
        if case .added(let d) = self { return d }
        return nil
    }
}

extension LiveCLITests {
    @Test("doctor exits 0 under the simulator, names the udev rule, and sees a kernel driver")
    func doctor() throws {
        let r = try CLI.ctl("doctor")
        #expect(r.status == 0, "\(r.stdout)")
        #expect(r.stdout.contains("libusb 1.0"))
        #expect(r.stdout.contains("/dev/bus/usb/001/"))
        #expect(r.stdout.contains("accessoryctl udev-rule --vendor 1209 --product 0001"))
        let added = try SimulatorControl.plug("1209:000d:SND").id
        defer { _ = try? SimulatorControl.ctl("unplug", added) }
        try SimulatorControl.ctl("kernel-driver", added, "0", "cdc_acm")
        let withDriver = try CLI.ctl("doctor")
        #expect(withDriver.status == 0, "a kernel driver is a warning, not a block")
        #expect(withDriver.stdout.contains("held by the kernel driver cdc_acm"))
    }
}

extension LiveCLITests {
    @Test("doctor reports each host controller's devices and endpoints, and warns as one nears 32 slots or 96 endpoints")
    func doctorForFarms() throws {
        let top = try SimulatorControl.ctl("plug-hub", "2-9", "7")
        try #require(top.count >= 3, "\(top)")
        let hub = "\(top[1]):\(top[2])"
        defer { _ = try? SimulatorControl.ctl("unplug", hub) }
        let quiet = try CLI.ctl("doctor")
        #expect(quiet.stdout.contains("host controller 0000:00:02.0 (xhci_hcd, bus 2): 1 device, 2 endpoints"), "\(quiet.stdout)")
        // 4 more hubs and 24 accessories behind them: 29 devices, 5×2 + 24×3 = 82 endpoints
        // (a hub has its interrupt endpoint and endpoint 0, a loopback two bulk ones and 0).
        for h in 1...4 {
            try SimulatorControl.ctl("plug-hub", "2-9.\(h)", "7")
            for p in 1...(h == 4 ? 3 : 7) { _ = try SimulatorControl.plug("1209:00f1:FARM\(h)\(p)", port: "2-9.\(h).\(p)").id }
        }
        let busy = try CLI.ctl("doctor")
        #expect(busy.status == 0, "a crowded controller is a warning, not a block")
        let line = busy.stdout.split(separator: "\n").first { $0.contains("host controller 0000:00:02.0") }.map(String.init) ?? ""
        #expect(line.contains("warning"), "\(busy.stdout)")
        #expect(line.contains("29 devices, near the 32 device slots"), "\(line)")
        #expect(line.contains("82 endpoints, near the 96"), "\(line)")
        #expect(busy.stdout.contains("fix: spread the accessories over more host controllers"))
    }
}
