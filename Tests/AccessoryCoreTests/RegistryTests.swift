import Testing
@testable import AccessoryCore

/// A loopback-like accessory descriptor for tests.
func device(
    bus: Int = 1, _ address: Int?, port: String = "1-1", vendor: UInt16 = 0x1209,
    product: UInt16 = 0x0001, serial: String? = "SN1"
) -> AccessoryDescriptor {
    AccessoryDescriptor(bus: bus, address: address, port: port, vendor: vendor, product: product, serial: serial)
}

func removal(bus: Int = 1, _ address: Int?, port: String? = "1-1") -> HotplugEvent {
    .removed(DeviceRemoval(bus: bus, address: address, port: port))
}

/// Applies events in order and returns every notification.
func run(_ registry: inout ConnectionRegistry, _ events: [HotplugEvent]) -> [AccessoryEvent] {
    events.flatMap { registry.apply($0).events }
}

/// The first of `items`; the test stops, recording an issue, if there is none.
func firstOf<T>(_ items: [T], sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
    try #require(items.first, "none", sourceLocation: sourceLocation)
}

/// The accessory of the first of `events`; the test stops, recording an issue, if there is none.
func firstAccessory(_ events: [AccessoryEvent], sourceLocation: SourceLocation = #_sourceLocation) throws -> Accessory {
    try #require(events.first, "no notification", sourceLocation: sourceLocation).accessory
}

extension AccessoryEvent {
    var isConnect: Bool { if case .connected = self { true } else { false } }
    var reason: DisconnectReason? { if case .disconnected(_, let r) = self { r } else { nil } }
    var id: UInt64 { accessory.connectionID.rawValue }
}

@Suite("Connection registry")
struct RegistryTests {
    @Test("IDs start at 1, increase per attach and are never reused")
    func idsAreMintedPerAttach() {
        var r = ConnectionRegistry()
        let events = run(&r, [
            .added(device(5)), removal(5), .added(device(6)), removal(6), .added(device(5)),
        ])
        let ids = events.filter(\.isConnect).map(\.id)
        #expect(ids == [1, 2, 3])
        #expect(r.accessories.map(\.connectionID.rawValue) == [3])
        #expect(ConnectionID.none.rawValue == 0)
    }

    @Test("A duplicated add is one attach")
    func duplicatedAdd() {
        var r = ConnectionRegistry()
        let events = run(&r, [.added(device(5)), .added(device(5)), .added(device(5))])
        #expect(events.count == 1)
        #expect(r.count == 1)
    }

    @Test("A remove names its instance; an unplug carries the reason unplugged")
    func unplug() {
        var r = ConnectionRegistry()
        let events = run(&r, [.added(device(5)), removal(5)])
        #expect(events.last?.reason == .unplugged)
        #expect(r.count == 0)
    }

    @Test("A remove before its add: the late add is not admitted, and the registry asks for a reconcile")
    func removeBeforeAdd() {
        var r = ConnectionRegistry()
        let update = r.apply(removal(5))
        #expect(update.events.isEmpty)
        #expect(update.suspicion == .unknownDevice(DeviceRemoval(bus: 1, address: 5, port: "1-1")))
        #expect(update.suspicion?.description == "a removal of bus 1 port 1-1 address 5 named no device")
        #expect(r.isSuspect)
        #expect(r.apply(.added(device(5))).events.isEmpty)
        #expect(r.count == 0)
        // The OS truth settles it either way.
        let report = Reconciler().reconcile(&r, against: [device(5)])
        #expect(report.admitted == 1)
        #expect(!r.isSuspect)
    }

    @Test("A late add after its remove is dropped before anything else: the live instance on the same port stays")
    func tombstoneBeforePortEviction() {
        var r = ConnectionRegistry()
        let live = r.apply(.added(device(9))).events
        #expect(live.count == 1)
        // The old instance's remove, then its add, both late (a storm's backlog).
        let events = run(&r, [removal(5), .added(device(5))])
        #expect(events.isEmpty, "\(events)")
        #expect(r.accessories.map(\.descriptor.address) == [9])
    }

    @Test("Hidden devices take hidden IDs: the shown ones are numbered 1, 2, … whatever else is plugged; a promotion mints the next shown ID")
    func hiddenIDs() throws {
        var r = ConnectionRegistry()
        let isShown = { (d: AccessoryDescriptor) in d.product != 0x0009 }
        let hub = r.apply(.added(device(2, port: "1-1", product: 0x0009)), isShown: isShown).events
        let a = r.apply(.added(device(3, port: "1-2")), isShown: isShown).events
        #expect(hub.first?.accessory.connectionID.isHidden == true)
        #expect(a.first?.id == 1)
        let snapshot = Reconciler().reconcile(
            &r, against: r.accessories.map(\.descriptor) + [device(4, port: "1-3", product: 0x0009), device(5, port: "1-4")],
            isShown: isShown)
        #expect(snapshot.events.filter { !$0.accessory.connectionID.isHidden }.map(\.id) == [2])
        let promoted = r.promote(try firstAccessory(hub).connectionID)
        #expect(promoted?.connectionID.rawValue == 3 && promoted?.descriptor.address == 2)
        #expect(r.accessory(at: DeviceKey(bus: 1, address: 2))?.connectionID.rawValue == 3)
        #expect(r.promote(ConnectionID(rawValue: 1)) == nil, "a shown ID is not promoted")
    }

    @Test("A device admitted after a promotion gets a newer ID than the promoted one, and two hidden devices get two hidden IDs")
    func admissionAfterPromotion() throws {
        var r = ConnectionRegistry()
        let isShown = { (d: AccessoryDescriptor) in d.product != 0x0009 }
        let a = r.apply(.added(device(3, port: "1-2")), isShown: isShown).events
        let hubs = [device(2, port: "1-1", product: 0x0009), device(4, port: "1-4", product: 0x0009)].flatMap {
            r.apply(.added($0), isShown: isShown).events
        }
        #expect(a.map(\.id) == [1])
        let first = try #require(hubs.first?.accessory.connectionID)
        let second = try #require(hubs.last?.accessory.connectionID)
        #expect(first.isHidden && second.isHidden && first != second, "two hidden devices, one hidden ID: \(first), \(second)")
        #expect(r.count == 3)
        let promoted = r.promote(first)
        #expect(promoted?.connectionID.rawValue == 2)
        let next = r.apply(.added(device(5, port: "1-3")), isShown: isShown).events
        #expect(next.map(\.id) == [3], "the ID after a promotion is a new one")
        #expect(r.accessories.map(\.connectionID.rawValue).filter { $0 < ConnectionID.hiddenBase } == [1, 2, 3])
        #expect(r.count == 4)
    }

    @Test("Keys with text hash alike when their text is equal: canonically equivalent serials are one serial, and a port is found under any equal spelling")
    func keysHashAsTheyCompare() throws {
        // "K" and U+212A KELVIN SIGN are equal strings; so are the two orders of two accents.
        let pairs: [(String, String)] = [
            ("K", "\u{212A}"), ("a;b`", "a\u{037E}b\u{1FEF}"), ("SN-\u{212A}9", "SN-K9"),
            ("e\u{301}\u{316}", "e\u{316}\u{301}"), ("\u{E9}", "e\u{301}"), ("1-1.4", String("x1-1.4".dropFirst())),
        ]
        for (a, b) in pairs {
            #expect(a == b)
            for seed in [0, 1, -7, 1 << 40] {
                #expect(TableHash.word(9, a, seed: seed) == TableHash.word(9, b, seed: seed), "\(a.unicodeScalars) vs \(b.unicodeScalars)")
            }
            let (p, q) = (PortKey(bus: 1, port: a), PortKey(bus: 1, port: b))
            #expect(p == q && p.hashValue == q.hashValue && [p: 1][q] == 1)
            var r = ConnectionRegistry()
            let first = try firstAccessory(r.apply(.added(device(5, port: "1-1", serial: a))).events)
            let second = try firstAccessory(r.apply(.added(device(6, port: "1-2", serial: b))).events)
            #expect(!first.hasClonedSerial && second.hasClonedSerial, "\(a.unicodeScalars) vs \(b.unicodeScalars)")
            _ = run(&r, [removal(5, port: "1-1")])
            let third = try firstAccessory(r.apply(.added(device(7, port: "1-3", serial: a))).events)
            #expect(third.hasClonedSerial)
            #expect(r.accessory(on: PortKey(bus: 1, port: "1-3"))?.connectionID == third.connectionID)
        }
        // And every equal pair among random strings of characters that compose, decompose or
        // stand for ASCII.
        let alphabet = ["K", "\u{212A}", "k", "e", "\u{301}", "\u{316}", "\u{E9}", ";", "\u{037E}", "`", "\u{1FEF}", "1", "-"]
        var rng = SystemRandomNumberGenerator()
        let strings = (0..<400).map { _ in (0..<Int.random(in: 0...4, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }.joined() }
        var otherSpellings = 0
        for a in strings {
            for b in strings where a == b {
                if !a.utf8.elementsEqual(b.utf8) { otherSpellings += 1 }
                #expect(TableHash.word(1, a, seed: 42) == TableHash.word(1, b, seed: 42), "\(a.unicodeScalars) vs \(b.unicodeScalars)")
            }
        }
        #expect(otherSpellings > 0)
        // Different text, different words for the same seed (not guaranteed in general; these differ).
        #expect(TableHash.word(9, "K", seed: 3) != TableHash.word(9, "k", seed: 3))
        #expect(TableHash.word(9, "\u{E9}", seed: 3) != TableHash.word(9, "e", seed: 3))
        #expect(PortKey(bus: 1, port: "1-1") != PortKey(bus: 2, port: "1-1"))
    }

    @Test("Cloned serials: a second accessory with the same VID:PID:serial gets an identity that includes its port")
    func clonedSerials() throws {
        var r = ConnectionRegistry()
        let first = try firstAccessory(r.apply(.added(device(5, port: "1-1"))).events)
        let clone = try firstAccessory(r.apply(.added(device(6, port: "1-2"))).events)
        #expect(first.physicalIdentity == .serialNumber(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        #expect(clone.physicalIdentity == .clonedSerial(vendor: 0x1209, product: 0x0001, serial: "SN1", bus: 1, port: "1-2"))
        #expect(first.physicalIdentity != clone.physicalIdentity && clone.physicalIdentity.description == "1209:0001:SN1@1-2")
        // Once the first has gone, the same serial is plain again.
        _ = run(&r, [removal(5, port: "1-1"), removal(6, port: "1-2")])
        let again = try firstAccessory(r.apply(.added(device(7, port: "1-2"))).events)
        #expect(again.physicalIdentity == first.physicalIdentity)
    }

    @Test("Overflow and wake mark the registry suspect until a reconcile")
    func suspicion() {
        var r = ConnectionRegistry()
        #expect(r.apply(.overflow).suspicion == .overflow)
        #expect(r.isSuspect)
        _ = r.apply(.snapshot([]))
        #expect(!r.isSuspect)
        #expect(r.apply(.sleep).suspicion == nil)
        #expect(r.apply(.wake).suspicion == .wake)
    }

    @Test("Address wrap at 127: a reused address with another fingerprint evicts the ghost first")
    func addressWrap() throws {
        var r = ConnectionRegistry()
        // Device A at address 3 lost its remove; 124 plugs later a different device B gets address 3.
        var events = run(&r, [.added(device(3, port: "1-1", serial: "A"))])
        for address in 4...127 {
            events += run(&r, [.added(device(address, port: "1-2", serial: "B")), removal(address, port: "1-2")])
        }
        events += run(&r, [.added(device(1, port: "1-2", serial: "B")), removal(1, port: "1-2")])
        events += run(&r, [.added(device(3, port: "1-2", serial: "B"))])
        let tail = Array(events.suffix(2))
        try #require(tail.count == 2)
        #expect(tail[0].reason == .ghostEvicted(.addressReused(by: device(3, port: "1-2", serial: "B"))))
        #expect(tail[0].accessory.descriptor.serial == "A")
        #expect(tail[1].isConnect)
        #expect(r.accessories.map(\.descriptor.serial) == ["B"])
        #expect(r.accessories.first?.connectionID.rawValue == 127)
    }

    @Test("A new instance on an occupied port evicts the old one before connecting")
    func portReplaced() throws {
        var r = ConnectionRegistry()
        let events = run(&r, [.added(device(5)), .added(device(6))])
        try #require(events.map(\.id) == [1, 1, 2])
        #expect(events[1].reason?.code == "ghost-evicted")
        #expect(events[1].reason?.evidence?.contains("port 1-1") == true)
    }

    @Test("Eight hours asleep: coalesced events on wake, the live device under a fresh ID")
    func eightHoursAsleep() throws {
        var r = ConnectionRegistry()
        var naive = Set<Int>()  // what a registry that believes every event would hold
        let live = device(12)
        let events: [HotplugEvent] = [
            .snapshot([]), .added(device(5)), .sleep, .wake,
            removal(5), .added(device(7)), removal(6), removal(8), .added(device(9)),
            .added(device(11)), removal(10),
        ]
        for e in events {
            if case .added(let d) = e { naive.insert(d.address!) }
            if case .removed(let d) = e { naive.remove(d.address!) }
        }
        #expect(naive == [7, 9, 11], "a naive registry ends holding stale entries")
        var log = run(&r, events)
        log += r.apply(.snapshot([live])).events
        let final = r.accessories
        try #require(final.count == 1)
        #expect(final[0].descriptor.address == 12)
        #expect(final[0].connectionID.rawValue == log.filter(\.isConnect).map(\.id).max())
        let evicted = log.filter { $0.reason?.code == "ghost-evicted" }.map(\.id)
        #expect(Set(evicted) == Set(log.filter(\.isConnect).map(\.id)).subtracting([1, final[0].connectionID.rawValue]))
        #expect(!evicted.isEmpty)
        #expect(log.first { $0.id == 1 && !$0.isConnect }?.reason == .unplugged)
    }

    @Test("Shutdown disconnects everything with reason shutdown, and IDs still never repeat")
    func shutdown() {
        var r = ConnectionRegistry()
        _ = run(&r, [.added(device(5)), .added(device(6, port: "1-2"))])
        let events = r.shutdown()
        #expect(events.map(\.reason) == [.shutdown, .shutdown])
        #expect(r.apply(.added(device(5))).events.first?.id == 3)
    }

    @Test("Physical identity survives re-attach under a new ID")
    func physicalIdentity() throws {
        var r = ConnectionRegistry()
        let a = run(&r, [.added(device(5)), removal(5), .added(device(9, port: "1-3"))])
        try #require(a.count == 3)
        #expect(a[0].accessory.physicalIdentity == a[2].accessory.physicalIdentity)
        #expect(a[0].accessory.connectionID != a[2].accessory.connectionID)
        let noSerial = device(5, serial: nil)
        #expect(noSerial.physicalIdentity == .port(bus: 1, port: "1-1", vendor: 0x1209, product: 1))
    }
}

@Suite("Reconciler")
struct ReconcilerTests {
    @Test("Evictions come before admissions, with evidence")
    func order() throws {
        var r = ConnectionRegistry()
        _ = run(&r, [.added(device(5)), .added(device(6, port: "1-2"))])
        let report = Reconciler().reconcile(&r, against: [device(7), device(6, port: "1-2")])
        #expect(report.kept == 1)
        try #require(report.events.map(\.isConnect) == [false, true])
        #expect(report.events[0].reason == .ghostEvicted(.absentFromSnapshot))
        #expect(report.events[1].id == 3)
    }

    @Test("Same bus and address with another fingerprint is another device")
    func addressReuse() {
        var r = ConnectionRegistry()
        _ = run(&r, [.added(device(5, serial: "A"))])
        let other = device(5, serial: "B")
        let report = Reconciler().reconcile(&r, against: [other])
        #expect(report.events.first?.reason == .ghostEvicted(.addressReused(by: other)))
        #expect(r.accessories.map(\.descriptor) == [other])
    }

    @Test("An imported add that knows only bus and port is matched by port and completed")
    func enrichByPort() {
        var r = ConnectionRegistry()
        _ = run(&r, [.added(AccessoryDescriptor(bus: 3, address: nil, port: "3-12.4.3"))])
        let full = device(bus: 3, 19, port: "3-12.4.3", vendor: 0x0403, product: 0x6001, serial: "A50449P0")
        let report = Reconciler().reconcile(&r, against: [full])
        #expect(report.events.isEmpty)
        #expect(r.accessories.first?.descriptor == full)
        #expect(r.accessory(at: DeviceKey(bus: 3, address: 19))?.connectionID.rawValue == 1)
    }

    @Test("A snapshot that lists one instance twice admits it once")
    func duplicateInSnapshot() {
        var r = ConnectionRegistry()
        let report = Reconciler().reconcile(&r, against: [device(5), device(5)])
        #expect(report.admitted == 1)
        #expect(r.count == 1)
    }

    @Test("Reconciling against the same truth twice changes nothing")
    func idempotent() {
        var r = ConnectionRegistry()
        let truth = (1...20).map { (i: Int) in device(i, port: "1-\(i)", serial: "S\(i)") }
        _ = Reconciler().reconcile(&r, against: truth)
        let again = Reconciler().reconcile(&r, against: truth.reversed())
        #expect(again.events.isEmpty)
        #expect(again.kept == 20)
    }
}

@Suite("Registry with imported logs")
struct ImportedLogRegistryTests {
    @Test("A remove then an add on one port, with no addresses (a re-plug in a cut log), admits the device")
    func replugWithoutAddresses() {
        var r = ConnectionRegistry()
        let events = run(&r, [
            .removed(DeviceRemoval(bus: 3, address: nil, port: "3-12.4.3")),
            .added(AccessoryDescriptor(bus: 3, address: nil, port: "3-12.4.3")),
        ])
        #expect(events.count == 1)
        #expect(r.count == 1)
    }
}
