import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

/// The tracker as a table: inputs, each with its time, and the effects that must come out.
@Suite("AccessoryTracker: inputs in, effects out")
struct TrackerTests {
    static func d(
        _ address: Int, port: String = "1-1", product: UInt16 = 0x0001, serial: String? = "SN", protocols: [String]? = nil
    ) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: 1, address: address, port: port, vendor: 0x1209, product: product, serial: serial, protocols: protocols)
    }

    static func info(_ d: AccessoryDescriptor, hub: Bool = false) -> USBDeviceInfo {
        USBDeviceInfo(descriptor: d, deviceClass: hub ? 9 : 0)
    }

    static func ms(_ n: Int) -> Duration { .milliseconds(n) }

    static func connected(_ effects: TrackerEffects) -> [UInt64] {
        effects.events.compactMap { if case .connected(let a) = $0 { a.connectionID.rawValue } else { nil } }
    }

    static func reasons(_ effects: TrackerEffects) -> [DisconnectReason] {
        effects.endedConnections.map(\.reason)
    }

    /// Runs every look the effects ask for against `truth`, at `now`, and returns all effects.
    static func settle(_ tracker: inout AccessoryTracker, _ effects: TrackerEffects, truth: [USBDeviceInfo], at now: Duration) -> TrackerEffects {
        var all = effects
        var next = effects
        while let plan = next.look {
            let seen: [USBDeviceInfo]
            switch plan.look {
            case .everything: seen = truth
            case .ports(let ports): seen = truth.filter { ports.contains($0.descriptor.port) }
            }
            next = tracker.scanned(seen, for: plan, at: now)
            all.look = nil
            all.append(next)
        }
        return all
    }

    /// Moves the clock to `now`, running every look due by then against `truth`.
    static func advance(_ tracker: inout AccessoryTracker, to now: Duration, truth: [USBDeviceInfo]) -> TrackerEffects {
        var all = TrackerEffects()
        while tracker.nextDeadline <= now {
            let at = tracker.nextDeadline
            let effects = tracker.due(at: at)
            all.append(settle(&tracker, effects, truth: truth, at: at))
            if effects.look == nil && tracker.nextDeadline <= at { break }
        }
        all.look = nil
        return all
    }

    @Test("Without recordsNotices (a playback's tracker) the same inputs give the same notifications and links, and record nothing")
    func notRecordingNotices() throws {
        let inputs: [HotplugEvent] = [
            .added(Self.d(5)), .added(Self.d(6, port: "1-2", serial: nil)), .sleep, .wake, .overflow,
            .removed(DeviceRemoval(bus: 1, address: 5, port: "1-1")), .removed(DeviceRemoval(bus: 1, address: 9, port: "1-3")),
            .added(Self.d(7)),
        ]
        var recording = AccessoryTracker(at: .zero)
        var quiet = AccessoryTracker(at: .zero)
        quiet.recordsNotices = false
        var recorded: [HotplugEvent] = []
        for (i, input) in inputs.enumerated() {
            var a = TrackerEffects(), b = TrackerEffects()
            recording.apply(input, at: Self.ms(i), into: &a)
            quiet.apply(input, at: Self.ms(i), into: &b)
            #expect(a.events == b.events, "input \(i)")
            #expect(b.recorded.isEmpty, "input \(i)")
            recorded += a.recorded
        }
        #expect(recorded.count == inputs.count, "the recording tracker records every input: \(recorded)")
        #expect(recording.accessories == quiet.accessories)
        #expect(quiet.accessories.last?.previousConnectionID == ConnectionID(rawValue: 1))
    }

    @Test("With looksAreAuthoritative (a playback's tracker) generated traces with faults give the same notifications, and notices leave no marks or ports for looks", arguments: [1, 2, 3, 4] as [UInt64])
    func authoritativeLooks(seed: UInt64) throws {
        let generated = TraceGenerator(.init(seed: seed, events: 3000, devices: 12, buses: 2, snapshotInterval: 150))
        var injector = FaultInjector(try .init(parsing: "drop=0.1,dup=0.1,reorder=0.2,wrap"), seed: seed)
        var records: [TraceRecord] = []
        for record in generated { injector.push(record) { records.append($0) } }
        injector.finish { records.append($0) }
        var full = AccessoryTracker(at: .zero)
        var playback = AccessoryTracker(at: .zero)
        playback.looksAreAuthoritative = true
        var notifications = 0
        for (i, record) in records.enumerated() {
            let now = record.time ?? .zero
            let a = full.apply(record.event, at: now), b = playback.apply(record.event, at: now)
            #expect(a.events == b.events, "record \(i): \(record.event)")
            notifications += a.events.count
            if case .removed = record.event { #expect(playback.schedule.touchedPorts.isEmpty && !playback.policy.hasGoneMarks) }
        }
        #expect(full.accessories == playback.accessories)
        #expect(notifications > 1000, "the trace must exercise the tracker: \(notifications) notifications")
        // The full tracker keeps them for its next look: the flag is what spares them.
        var marked = AccessoryTracker(at: .zero)
        _ = marked.apply(.added(Self.d(5)), at: Self.ms(1))
        _ = marked.apply(.removed(DeviceRemoval(bus: 1, address: 5, port: "1-1")), at: Self.ms(2))
        #expect(marked.schedule.touchedPorts == ["1-1"] && marked.policy.hasGoneMarks)
    }

    @Test("An arrival the port's look confirms is connected with the look's fuller view; the ports it names are looked at after the debounce")
    func liveArrival() throws {
        var tracker = AccessoryTracker(at: .zero)
        let notice = Self.info(Self.d(5, serial: nil))
        let live = Self.info(Self.d(5, serial: "SN9"))
        let effects = tracker.arrived(notice, portNow: live, at: Self.ms(1))
        let accessory = try #require(tracker.accessories.first)
        #expect(Self.connected(effects) == [1])
        #expect(accessory.descriptor.serial == "SN9")
        #expect(effects.recorded == [.added(live.descriptor)])
        #expect(tracker.nextDeadline == Self.ms(21))
        let due = tracker.due(at: Self.ms(21))
        #expect(due.look?.look == .ports(["1-1"]))
        #expect(due.look?.trigger == .debounced)
    }

    @Test("A stale arrival (a newer instance holds the port) is skipped, and its LEFT removes nothing and raises no suspicion")
    func staleArrival() {
        var tracker = AccessoryTracker(at: .zero)
        let newer = Self.info(Self.d(7))
        _ = tracker.arrived(newer, portNow: newer, at: Self.ms(1))
        let stale = tracker.arrived(Self.info(Self.d(6)), portNow: newer, at: Self.ms(2))
        #expect(stale.events.isEmpty)
        #expect(stale.recorded == [.added(Self.d(6))])
        let left = tracker.left(Self.d(6), portIsExact: true, at: Self.ms(3))
        #expect(left.events.isEmpty)
        #expect(!tracker.registry.isSuspect)
        #expect(tracker.accessories.map(\.connectionID.rawValue) == [1])
    }

    @Test("A LEFT event makes the disconnect unplugged; an entry the truth lacks waits the LEFT window, then is a ghost")
    func leftWindow() throws {
        var tracker = AccessoryTracker(at: .zero)
        let a = Self.info(Self.d(5, port: "1-1"))
        let b = Self.info(Self.d(6, port: "1-2"))
        _ = tracker.arrived(a, portNow: a, at: Self.ms(1))
        _ = tracker.arrived(b, portNow: b, at: Self.ms(1))
        #expect(Self.reasons(tracker.left(a.descriptor, portIsExact: true, at: Self.ms(5))) == [.unplugged])
        // b vanishes from the truth with no LEFT: a routine look keeps it until the window ends.
        let early = Self.advance(&tracker, to: Self.ms(30), truth: [])
        #expect(early.events.isEmpty)
        #expect(tracker.accessories.count == 1)
        let late = Self.advance(&tracker, to: Self.ms(400), truth: [])
        #expect(Self.reasons(late) == [.ghostEvicted(.absentFromSnapshot)])
        #expect(tracker.accessories.isEmpty)
    }

    @Test("A NO_DEVICE the truth confirms is a ghost that names the operation; one it never confirms is a false alarm and the entry stays")
    func noDevice() {
        var tracker = AccessoryTracker(at: .zero)
        let a = Self.info(Self.d(5, port: "1-1"))
        let b = Self.info(Self.d(6, port: "1-2"))
        _ = tracker.arrived(a, portNow: a, at: .zero)
        _ = tracker.arrived(b, portNow: b, at: .zero)
        _ = Self.advance(&tracker, to: Self.ms(50), truth: [a, b])
        let known = [
            tracker.noDevice(ConnectionID(rawValue: 1), operation: "bulk IN 0x81", at: Self.ms(100)),
            tracker.noDevice(ConnectionID(rawValue: 2), operation: "bulk OUT 0x01", at: Self.ms(100)),
            tracker.noDevice(ConnectionID(rawValue: 99), operation: "open", at: Self.ms(100)),
        ]
        #expect(known == [true, true, false])
        // a leaves the truth; b stays listed for the whole wait.
        let effects = Self.advance(&tracker, to: Self.ms(1000), truth: [b])
        #expect(Self.reasons(effects) == [.ghostEvicted(.noDevice(operation: "bulk IN 0x81"))])
        #expect(effects.falseAlarms.map(\.id.rawValue) == [2])
        #expect(effects.falseAlarms.map(\.operation) == ["bulk OUT 0x01"])
        #expect(tracker.accessories.map(\.connectionID.rawValue) == [2])
    }

    @Test("A sleep seen by the periodic tick records sleep and wake and makes an impatient full look: ghosts go at once")
    func sleepAndWake() {
        var tracker = AccessoryTracker(configuration: .init(reconcileInterval: .seconds(2)), at: .zero, bootTime: .zero)
        let a = Self.info(Self.d(5))
        _ = tracker.arrived(a, portNow: a, at: .zero)
        _ = Self.advance(&tracker, to: Self.ms(100), truth: [a])
        // The tick at 2 s: BOOTTIME ran eight hours ahead of MONOTONIC.
        let tick = tracker.due(at: .seconds(2), bootTime: .seconds(2 + 8 * 3600))
        #expect(tick.recorded == [.sleep, .wake])
        #expect(tick.look?.trigger == .wake)
        #expect(tick.look?.look == .everything)
        let look = Self.settle(&tracker, tick, truth: [], at: .seconds(2))
        #expect(Self.reasons(look) == [.ghostEvicted(.absentFromSnapshot)])
        // Without a sleep, the tick is a periodic look.
        #expect(tracker.due(at: .seconds(4), bootTime: .seconds(4 + 8 * 3600)).look?.trigger == .periodic)
    }

    @Test("Visibility lives in one place: hubs and unsupported devices get hidden IDs and no events; shown ones count from 1")
    func visibility() {
        var tracker = AccessoryTracker(configuration: .init(supportedProtocols: ["p"]), at: .zero)
        let hub = Self.info(Self.d(2, port: "1-1", protocols: ["p"]), hub: true)
        let other = Self.info(Self.d(3, port: "1-2", protocols: ["q"]))
        let mine = Self.info(Self.d(4, port: "1-3", protocols: ["p"]))
        var effects = tracker.arrived(hub, portNow: hub, at: .zero)
        effects.append(tracker.arrived(other, portNow: other, at: .zero))
        effects.append(tracker.arrived(mine, portNow: mine, at: .zero))
        #expect(Self.connected(effects) == [1])
        #expect(effects.recorded == [.added(mine.descriptor)])
        #expect(tracker.accessories.map(\.descriptor.port) == ["1-3"])
        #expect(tracker.registry.count == 3)
        #expect(tracker.device(ConnectionID(rawValue: 1))?.descriptor.port == "1-3")
    }

    @Test("The protocol table is applied by the tracker to every device it is told of: arrivals, looks and trace snapshots")
    func protocolTable() {
        let table = ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x0042, speaks: "com.example.reader")])
        var tracker = AccessoryTracker(configuration: .init(supportedProtocols: ["com.example.reader"], protocolTable: table), at: .zero)
        let reader = Self.info(Self.d(5, port: "1-1", product: 0x0042))
        let other = Self.info(Self.d(6, port: "1-2", product: 0x0043))
        var effects = tracker.arrived(reader, portNow: nil, at: .zero)
        effects.append(tracker.arrived(other, portNow: nil, at: .zero))
        #expect(Self.connected(effects) == [1])
        #expect(tracker.accessories.first?.descriptor.protocols == ["com.example.reader"])
        // A snapshot, as a trace's, is judged by the same table.
        var replay = AccessoryTracker(configuration: tracker.configuration, at: .zero)
        let snap = replay.apply(.snapshot([reader.descriptor, other.descriptor]), at: .zero)
        #expect(Self.connected(snap) == [1])
        #expect(snap.recorded.isEmpty)
    }

    @Test("A hidden device whose look later shows a supported protocol is shown under its first shown ID, and the next one gets the next")
    func promotion() throws {
        var tracker = AccessoryTracker(configuration: .init(supportedProtocols: ["p"]), at: .zero)
        let bare = Self.info(Self.d(5, port: "1-1", protocols: []))
        _ = tracker.arrived(bare, portNow: bare, at: .zero)
        #expect(tracker.accessories.isEmpty)
        var configured = bare
        configured.descriptor.protocols = ["p"]
        let effects = Self.advance(&tracker, to: Self.ms(50), truth: [configured])
        #expect(Self.connected(effects) == [1])
        let next = Self.info(Self.d(6, port: "1-2", protocols: ["p"]))
        #expect(Self.connected(tracker.arrived(next, portNow: next, at: Self.ms(60))) == [2])
    }

    @Test("While recording, every look reads everything and the recording gets its snapshot of shown devices")
    func recording() {
        var tracker = AccessoryTracker(at: .zero)
        tracker.isRecording = true
        let a = Self.info(Self.d(5))
        _ = tracker.arrived(a, portNow: a, at: .zero)
        let due = tracker.due(at: Self.ms(20))
        #expect(due.look?.look == .everything)
        let look = Self.settle(&tracker, due, truth: [a, Self.info(Self.d(1, port: "usb1"), hub: true)], at: Self.ms(20))
        #expect(look.recorded == [.snapshot([a.descriptor])])
    }

    @Test("Time is an argument: a re-plug within the link window names the connection it continues, one later does not")
    func links() throws {
        var tracker = AccessoryTracker(at: .zero)
        let first = Self.info(Self.d(5))
        _ = tracker.arrived(first, portNow: first, at: .zero)
        _ = tracker.left(first.descriptor, portIsExact: true, at: .seconds(1))
        let second = Self.info(Self.d(6))
        _ = tracker.arrived(second, portNow: second, at: .seconds(2))
        #expect(tracker.accessories.first?.previousConnectionID == ConnectionID(rawValue: 1))
        _ = tracker.left(second.descriptor, portIsExact: true, at: .seconds(3))
        let third = Self.info(Self.d(7))
        _ = tracker.arrived(third, portNow: third, at: .seconds(60))
        let last = try #require(tracker.accessories.first)
        #expect(last.connectionID.rawValue == 3)
        #expect(last.previousConnectionID == nil)
    }

    @Test("Property: on random inputs (notices, looks, NO_DEVICE, wakes, hubs, hidden devices) no ID is issued twice and invariants 1–3 hold")
    func randomInputs() {
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var tracker = AccessoryTracker(configuration: .init(supportedProtocols: ["p"]), at: .zero, bootTime: .zero)
            var checker = InvariantChecker()
            var truth: [String: USBDeviceInfo] = [:]
            var nextAddress = 2
            var now = Duration.zero
            var sleptTotal = Duration.zero
            func observe(_ e: TrackerEffects) { for event in e.events { checker.observe(event) } }
            for _ in 0..<120 {
                now += .milliseconds(Int(rng.next() % 300))
                let port = "1-\(1 + Int(rng.next() % 5))"
                switch rng.next() % 7 {
                case 0, 1:  // plug (maybe a hub, maybe unsupported), the event maybe lost
                    let protocols = rng.next() % 3 == 0 ? ["q"] : ["p"]
                    let info = Self.info(
                        Self.d(nextAddress, port: port, product: UInt16(rng.next() % 3), serial: "S\(rng.next() % 4)", protocols: protocols),
                        hub: rng.next() % 8 == 0)
                    nextAddress = nextAddress >= 127 ? 2 : nextAddress + 1
                    truth[port] = info
                    if rng.next() % 5 != 0 { observe(tracker.arrived(info, portNow: truth[port], at: now)) }
                case 2, 3:  // unplug, the event maybe lost
                    if let gone = truth.removeValue(forKey: port), rng.next() % 5 != 0 {
                        observe(tracker.left(gone.descriptor, portIsExact: true, at: now))
                    }
                case 4:
                    if let id = tracker.accessories.randomElement(using: &rng)?.connectionID {
                        tracker.noDevice(id, operation: "read", at: now)
                    }
                case 5:
                    sleptTotal += .seconds(Int(rng.next() % 3) * 5)
                    observe(Self.advance(&tracker, to: now, truth: Array(truth.values)))
                    _ = tracker.due(at: now, bootTime: now + sleptTotal)
                default:
                    observe(Self.advance(&tracker, to: now, truth: Array(truth.values)))
                }
            }
            // An authoritative look at the end: the tracker equals the truth.
            observe(tracker.snapshot(Array(truth.values), at: now))
            let shown = truth.values.filter { !$0.isHub && $0.descriptor.protocols == ["p"] }.map(\.descriptor.port).sorted()
            #expect(tracker.accessories.map(\.descriptor.port).sorted() == shown, "seed \(seed)")
            #expect(checker.problems.isEmpty, "seed \(seed): \(checker.problems.prefix(2))")
        }
    }
}
