import AccessoryCore
import AccessoryTraces
import AccessoryTestSupport
import Foundation
import Testing

/// Several hotplug listeners in separate processes at once, each checked against a plain C
/// libusb hotplug client running beside them (issue #16: under umockdev's own naming, two
/// processes shared one uevent socket name and the first stopped receiving uevents).
///
/// These tests belong to the serialized live suite (``LiveCLITests``), so they never run beside
/// its plugs and unplugs, whose notifications it counts.
extension LiveCLITests {
    static let loopback = "org.example.loopback"

    @Test("A watch keeps every event after a second watch started and stopped beside it")
    func watchSurvivesASecondWatch() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try HotplugClient(in: dir)
        defer { c.stop() }
        let first = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        defer { _ = first.stop(with: SIGINT) }
        #expect(first.waitForOutput { $0.contains("\"serial\":\"SN1\"") }, "\(first.stderr)")
        let second = try Background(CLI.accessoryctl, ["watch"] + Self.interval, in: dir)
        #expect(second.waitForOutput { $0.contains("SN1") }, "\(second.stderr)")
        try UeventSockets.expectOwnSockets(for: [first, second].map(\.process.processIdentifier) + [c.pid])
        #expect(second.stop(with: SIGINT) == 0, "\(second.stderr)")

        let instances = try Cycle.run(5, spec: "1209:00a1:MP1", client: c)
        let seen = try Self.expectSawEveryEvent(in: first, client: c, serial: "MP1", instances: instances)
        #expect(seen.unplugged(serial: "MP1") == instances, "the first watch's unplugs \(seen.unplugged(serial: "MP1")) of \(instances)")
        try SimulatorControl.ctl("uevent-check")
    }

    @Test("Two watches started one after the other both see every later event")
    func twoWatchesBothSeeEverything() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try HotplugClient(in: dir)
        defer { c.stop() }
        let first = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        defer { _ = first.stop(with: SIGINT) }
        #expect(first.waitForOutput { $0.contains("\"serial\":\"SN1\"") }, "\(first.stderr)")
        let second = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        defer { _ = second.stop(with: SIGINT) }
        #expect(second.waitForOutput { $0.contains("\"serial\":\"SN1\"") }, "\(second.stderr)")
        try UeventSockets.expectOwnSockets(for: [first, second].map(\.process.processIdentifier) + [c.pid])

        let instances = try Cycle.run(5, spec: "1209:00a2:MP2", client: c)
        for watch in [first, second] {
            let seen = try Self.expectSawEveryEvent(in: watch, client: c, serial: "MP2", instances: instances)
            #expect(seen.unplugged(serial: "MP2") == instances)
        }
        try SimulatorControl.ctl("uevent-check")
    }

    @Test("watch beside open sessions in other processes: 20 stream/unplug/replug cycles, every instance announced, every unplug 'unplugged'")
    func watchBesideOpenSessions() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let spec = "1209:00a3:MP3:\(Self.loopback)"
        let c = try HotplugClient(in: dir)
        defer { c.stop() }
        let watch = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        defer { _ = watch.stop(with: SIGINT) }
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SN1\"") }, "\(watch.stderr)")

        var device = try SimulatorControl.plug(spec).id
        var instances = [device]
        try c.waitFor(device, arrived: true)
        var openReasons: [String: Int] = [:]
        let cycles = 20
        for cycle in 0..<cycles {
            // Stream bytes through a session in another process, then unplug under it.
            let open = try OpenProcess(["1209:00a3:MP3", "--protocol", Self.loopback], in: dir)
            try UeventSockets.expectOwnSockets(for: [watch.process.processIdentifier, c.pid])
            var generator = SplitMix64(seed: UInt64(cycle + 1))
            let payload = Data(generator.bytes(16 * 1024))
            open.send(payload)
            pollUntil { open.stdout.count >= payload.count || !open.process.isRunning }
            #expect(open.stdout == payload, "cycle \(cycle): open echoed \(open.stdout.count) of \(payload.count) bytes: \(open.stderr)")
            try SimulatorControl.ctl("unplug", device)
            let exit = open.waitForExit()
            // open's own reason on an unplug mid-stream is issue #11; it is recorded, not judged.
            let reason = open.stderr.contains("ghost-evicted") ? "ghost-evicted" : open.stderr.contains("unplugged") ? "unplugged" : "other(\(exit.status))"
            openReasons[reason, default: 0] += 1
            try c.waitFor(device, arrived: false)
            device = try SimulatorControl.plug(spec).id
            instances.append(device)
            try c.waitFor(device, arrived: true)
        }
        let seen = try Self.expectSawEveryEvent(in: watch, client: c, serial: "MP3", instances: instances)
        #expect(seen.unplugged(serial: "MP3") == Array(instances.dropLast()), "\(seen.unplugged(serial: "MP3").count) of \(cycles) unplugs reported as unplugged")
        #expect(seen.ghostEvicted(serial: "MP3").isEmpty, "plain unplugs reported as ghosts: \(seen.ghostEvicted(serial: "MP3"))")
        // The watch ends holding the live device.
        let live = try SimulatorControl.device(serial: "MP3").id
        #expect(seen.held(serial: "MP3") == live, "watch holds \(seen.held(serial: "MP3") ?? "nothing"), the simulator lists \(live)")
        print("watchBesideOpenSessions: C client \(c.events(of: instances).filter { $0.arrived }.count) arrivals, \(c.events(of: instances).filter { !$0.arrived }.count) lefts; watch \(seen.connected(serial: "MP3").count) connected, \(seen.unplugged(serial: "MP3").count) unplugged; open's own exit reasons: \(openReasons)")
        try SimulatorControl.ctl("unplug", device)
        try SimulatorControl.ctl("uevent-check")
    }

    @Test("record and watch at once both see every event the C client saw")
    func recordAndWatch() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("both.jsonl").path
        let c = try HotplugClient(in: dir)
        defer { c.stop() }
        let watch = try Background(CLI.accessoryctl, ["watch", "--json"] + Self.interval, in: dir)
        defer { _ = watch.stop(with: SIGINT) }
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SN1\"") }, "\(watch.stderr)")
        let record = try Background(CLI.accessoryctl, ["record", trace] + Self.interval, in: dir)
        // record writes its start-up snapshot once its monitor runs.
        #expect(pollUntil { ((try? TraceReader.readAll(path: trace))?.records.contains { if case .snapshot = $0.event { true } else { false } }) ?? false },
                "record never wrote its first snapshot: \(record.stderr)")
        try UeventSockets.expectOwnSockets(for: [watch.process.processIdentifier, record.process.processIdentifier, c.pid])

        let instances = try Cycle.run(5, spec: "1209:00a4:MP4", client: c)
        let cAdds = c.events(of: instances).filter(\.arrived).map(\.key), cLefts = c.events(of: instances).filter { !$0.arrived }.map(\.key)
        func traced() -> (adds: [String], removes: [String]) {
            let records = (try? TraceReader.readAll(path: trace).records) ?? []
            var adds: [String] = [], removes: [String] = []
            for r in records {
                switch r.event {
                case .added(let d) where d.serial == "MP4": adds.append("\(d.bus):\(d.address ?? 0)")
                case .removed(let r): if cLefts.contains("\(r.bus):\(r.address ?? 0)") { removes.append("\(r.bus):\(r.address ?? 0)") }
                default: break
                }
            }
            return (adds, removes)
        }
        #expect(pollUntil { Set(traced().adds).isSuperset(of: cAdds) && Set(traced().removes).isSuperset(of: cLefts) },
                "record saw adds \(traced().adds), removes \(traced().removes); the C client saw arrivals \(cAdds), lefts \(cLefts)")
        #expect(record.stop(with: SIGINT) == 0, "\(record.stderr)")
        let t = traced()
        #expect(t.adds == instances && t.removes == instances, "record: adds \(t.adds), removes \(t.removes); instances \(instances)")
        try Self.expectSawEveryEvent(in: watch, client: c, serial: "MP4", instances: instances)
        try SimulatorControl.ctl("uevent-check")
    }

    @Test("The guard: two listeners without the shim share umockdev's event<FD> name, and uevent-check fails loudly")
    func guardCatchesASharedSocket() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Only umockdev's preload: both clients open their uevent socket under the same fd.
        var env = ProcessInfo.processInfo.environment
        env["LD_PRELOAD"] = "libumockdev-preload.so.0"
        let a = try HotplugClient(in: dir, environment: env)
        defer { a.stop() }
        let b = try HotplugClient(in: dir, environment: env)
        defer { b.stop() }
        let check = try CLI.run(SimulatorControl.binary, ["ctl", "uevent-check"])
        #expect(check.status == 1, "uevent-check passed with two shim-less listeners: \(check.stdout)")
        #expect(check.stdout.contains("shared by 2 live sockets"), "\(check.stdout)")
        a.stop()
        b.stop()
        // Both gone: their sockets refuse connections and the name is no longer shared.
        #expect(pollUntil { ((try? CLI.run(SimulatorControl.binary, ["ctl", "uevent-check"]))?.stdout.contains("shared") ?? true) == false })
    }

    // ---- helpers ----

    /// Waits until `watch` has announced every arrival of `instances` (of `serial`) the C
    /// client saw (as `connected` at that bus and address) and reported every left (as
    /// `disconnected`), then checks it.
    @discardableResult
    static func expectSawEveryEvent(in watch: Background, client: HotplugClient, serial: String, instances: [String],
                                    sourceLocation: SourceLocation = #_sourceLocation) throws -> WatchLog {
        let arrivals = client.events(of: instances).filter(\.arrived).map(\.key)
        let lefts = client.events(of: instances).filter { !$0.arrived }.map(\.key)
        #expect(arrivals == instances, "the C client's arrivals \(arrivals), the instances plugged \(instances)",
                sourceLocation: sourceLocation)
        _ = watch.waitForOutput { out in
            let log = WatchLog(out)
            return Set(log.connected(serial: serial)).isSuperset(of: arrivals)
                && Set(log.disconnected(serial: serial)).isSuperset(of: lefts)
        }
        let log = WatchLog(watch.stdout)
        let missingArrivals = arrivals.filter { !log.connected(serial: serial).contains($0) }
        let missingLefts = lefts.filter { !log.disconnected(serial: serial).contains($0) }
        #expect(missingArrivals.isEmpty && missingLefts.isEmpty,
                "watch (pid \(watch.process.processIdentifier)) missed arrivals \(missingArrivals) and lefts \(missingLefts) of the C client's \(arrivals.count) arrivals and \(lefts.count) lefts; it printed:\n\(watch.stdout)\(watch.stderr)",
                sourceLocation: sourceLocation)
        #expect(log.connected(serial: serial).count == arrivals.count, "one connected per arrival", sourceLocation: sourceLocation)
        return log
    }
}

/// N cycles of "unplug, then re-plug" of one accessory, each waited for on the C client.
enum Cycle {
    /// Plugs `spec`, then unplugs and re-plugs it `count` times, then unplugs it. Returns the
    /// `BUS:ADDRESS` of every instance (`count` + 1), in order.
    static func run(_ count: Int, spec: String, client: HotplugClient) throws -> [String] {
        var current = try SimulatorControl.plug(spec).id
        var instances = [current]
        try client.waitFor(current, arrived: true)
        for _ in 1...count {
            try SimulatorControl.ctl("unplug", current)
            try client.waitFor(current, arrived: false)
            current = try SimulatorControl.plug(spec).id
            instances.append(current)
            try client.waitFor(current, arrived: true)
        }
        try SimulatorControl.ctl("unplug", current)
        try client.waitFor(current, arrived: false)
        return instances
    }
}

/// `watch --json` output, by serial: `BUS:ADDRESS` of each notification.
struct WatchLog {
    var lines: [[String: Any]]

    init(_ text: String) {
        lines = text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    private func keys(_ serial: String, _ match: ([String: Any]) -> Bool) -> [String] {
        lines.filter { $0["serial"] as? String == serial && match($0) }.map { "\($0["bus"] as? Int ?? -1):\($0["address"] as? Int ?? -1)" }
    }

    func connected(serial: String) -> [String] { keys(serial) { $0["notification"] as? String == "connected" } }
    func disconnected(serial: String) -> [String] { keys(serial) { $0["notification"] as? String == "disconnected" } }
    func unplugged(serial: String) -> [String] { keys(serial) { $0["reason"] as? String == "unplugged" } }
    func ghostEvicted(serial: String) -> [String] { keys(serial) { $0["reason"] as? String == "ghost-evicted" } }

    /// The instance held at the end: the last `connected` not followed by its `disconnected`.
    func held(serial: String) -> String? {
        var held: String?
        for line in lines where line["serial"] as? String == serial {
            let key = "\(line["bus"] as? Int ?? -1):\(line["address"] as? Int ?? -1)"
            if line["notification"] as? String == "connected" { held = key } else if held == key { held = nil }
        }
        return held
    }
}

/// The plain C libusb hotplug client of benchmarks/c/hotplug_latency.c, built once per run.
final class HotplugClient {
    struct Event { var arrived: Bool; var key: String }

    private let background: Background
    var pid: Int32 { background.process.processIdentifier }

    /// Built through files, not pipes: while other suites spawn processes at the same time, a
    /// pipe's write end can leak into this process and a read to its end never returns.
    static let binary: Result<String, SimulatorControl.Failure> = {
        let tmp = FileManager.default.temporaryDirectory
        let out = tmp.appendingPathComponent("hotplug-client-\(getpid())").path
        let source = CLI.packageRoot.appendingPathComponent("benchmarks/c/hotplug_latency.c").path
        let script = "cc -O1 -Wall -Wextra -o '\(out)' '\(source)' $(pkg-config --cflags --libs libusb-1.0)"
        guard let build = try? Background("/bin/sh", ["-c", script], in: tmp) else {
            return .failure(SimulatorControl.Failure(description: "cannot run cc"))
        }
        let status = build.waitForExit(timeout: 120)
        try? FileManager.default.removeItem(at: build.stdoutURL)
        defer { try? FileManager.default.removeItem(at: build.stderrURL) }
        guard status == 0 else { return .failure(SimulatorControl.Failure(description: "cannot build the C client (\(status)): \(build.stderr)")) }
        return .success(out)
    }()

    init(in dir: URL, environment: [String: String]? = nil) throws {
        let path = try Self.binary.get()
        background = try Background(path, [], in: dir, environment: environment)
        guard background.waitForOutput({ $0.hasPrefix("ready") }) else {
            throw SimulatorControl.Failure(description: "the C hotplug client did not start: \(background.stderr)")
        }
    }

    var events: [Event] {
        background.stdout.split(separator: "\n").compactMap { line in
            let w = line.split(separator: " ")
            guard w.count >= 3, w[0] == "arrived" || w[0] == "left" else { return nil }
            return Event(arrived: w[0] == "arrived", key: "\(w[1]):\(w[2])")
        }
    }

    /// The events of the given instances only (other suites may plug devices meanwhile).
    func events(of instances: [String]) -> [Event] { events.filter { instances.contains($0.key) } }

    /// Waits until the client saw `device` (`BUS:ADDRESS`) arrive, or leave.
    func waitFor(_ device: String, arrived: Bool) throws {
        guard background.waitForOutput({ _ in self.events.contains { $0.key == device && $0.arrived == arrived } }) else {
            throw SimulatorControl.Failure(description: "the C client never saw \(device) \(arrived ? "arrive" : "leave"): \(background.stdout)")
        }
    }

    func stop() {
        if background.process.isRunning { _ = background.stop(with: SIGTERM) }
    }
}

/// The uevent sockets in the simulator's testbed ($UMOCKDEV_DIR/event…).
enum UeventSockets {
    static func names() -> [String] {
        guard let dir = ProcessInfo.processInfo.environment["UMOCKDEV_DIR"] else { return [] }
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("event") }
    }

    /// Every process in `pids` has a uevent socket of its own (the shim's event00<PID><FD>
    /// name), and no two live sockets share a name (the simulator's uevent-check).
    /// A failure is recorded, and the test goes on, so it also shows which events were lost.
    static func expectOwnSockets(for pids: [Int32], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let names = names()
        for pid in pids {
            let prefix = "event00" + String(format: "%07d", pid)
            #expect(names.contains { $0.hasPrefix(prefix) }, "process \(pid) has no uevent socket of its own among \(names)",
                    sourceLocation: sourceLocation)
        }
        let check = try CLI.run(SimulatorControl.binary, ["ctl", "uevent-check"])
        #expect(check.status == 0, "two listeners share a uevent socket name: \(check.stdout)", sourceLocation: sourceLocation)
    }
}
