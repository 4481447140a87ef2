import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

/// Every ID a registry issues, shown or hidden, admitted or promoted: none issued twice, and
/// shown ones strictly increasing.
struct IDLedger {
    private var issued = Set<ConnectionID>()
    private var lastShown = ConnectionID.none
    private(set) var problems: [String] = []
    private(set) var promotions = 0
    private(set) var hidden = 0

    mutating func issue(_ id: ConnectionID, by how: String, at label: String) {
        if !issued.insert(id).inserted { problems.append("\(label): \(how) issued ID \(id) a second time") }
        if id.isHidden {
            hidden += 1
        } else {
            if id <= lastShown { problems.append("\(label): \(how) issued ID \(id) after \(lastShown)") }
            lastShown = max(lastShown, id)
        }
    }

    mutating func observe(_ events: [AccessoryEvent], at label: String) {
        for case .connected(let a) in events { issue(a.connectionID, by: "an admission", at: label) }
    }

    mutating func promoted(_ id: ConnectionID, at label: String) {
        promotions += 1
        issue(id, by: "a promotion", at: label)
    }
}

@Suite("Connection IDs are issued once")
struct ConnectionIDPropertyTests {
    /// A hub's descriptor: hidden, as a manager hides hubs.
    static func hub(bus: Int, address: Int, port: String) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: bus, address: address, port: port, vendor: 0x1d6b, product: 0x0002, serial: nil)
    }

    /// Drives a registry with one generated, faulted trace, hubs plugged and unplugged among
    /// its events, a random share of its devices hidden (unsupported protocols), and hidden
    /// entries promoted at random; returns the ledger of every ID issued.
    static func run(seed: UInt64) -> IDLedger {
        var rng = SplitMix64(seed: seed)
        let config = TraceGenerator.Configuration(
            seed: seed, events: 20 + rng.next(below: 100), devices: 1 + rng.next(below: 6), buses: 1 + rng.next(below: 2),
            snapshotInterval: 5 + rng.next(below: 35), sleepProbability: 0.02, overflowProbability: 0.02)
        let faults = FaultInjector.Configuration(
            drop: rng.nextUnit() * 0.2, duplicate: rng.nextUnit() * 0.2, reorder: rng.nextUnit() * 0.2, delay: 0,
            wrapAddresses: rng.chance(0.25))
        let hiddenVendors = Set([0x1209, 0x0403, 0x1a86, 0x2341, 0x1c11, 0x0483, 0x10c4, 0x046d].filter { _ in rng.chance(0.4) }.map(UInt16.init))
        let isShown = { (d: AccessoryDescriptor) in d.vendor != 0x1d6b && !(d.vendor.map(hiddenVendors.contains) ?? false) }
        var registry = ConnectionRegistry()
        var ledger = IDLedger()
        var hubs: [AccessoryDescriptor] = []
        var nextHub = 0
        for (i, record) in FaultInjector.inject(faults, seed: seed ^ 0x1d5, into: TraceGenerator(config)).enumerated() {
            let label = "seed \(seed) record \(i)"
            if let time = record.time { registry.now = time }
            ledger.observe(registry.apply(record.event, isShown: isShown).events, at: label)
            if rng.chance(0.1) {
                // A hub arrives (on a bus address of its own, so as not to take a device's) or leaves.
                if hubs.isEmpty || rng.chance(0.6) {
                    nextHub += 1
                    let hub = Self.hub(bus: 9, address: 2 + nextHub % 120, port: "9-\(nextHub % 7 + 1)")
                    hubs.append(hub)
                    ledger.observe(registry.apply(.added(hub), isShown: isShown).events, at: label + " hub")
                } else {
                    let hub = hubs.remove(at: rng.next(below: hubs.count))
                    _ = registry.apply(.removed(DeviceRemoval(bus: hub.bus, address: hub.address, port: hub.port)), isShown: isShown)
                }
            }
            let hidden = registry.accessories.filter(\.connectionID.isHidden)
            if !hidden.isEmpty, rng.chance(0.15), let promoted = registry.promote(hidden[rng.next(below: hidden.count)].connectionID) {
                ledger.promoted(promoted.connectionID, at: label + " promotion")
            }
        }
        return ledger
    }

    @Test("No ID is issued twice over 2,000 random traces with hubs, hidden devices and promotions")
    func noIDIsIssuedTwice() {
        var failures: [String] = []
        var promotions = 0
        var hidden = 0
        for seed in UInt64(1)...2_000 {
            let ledger = Self.run(seed: seed)
            if let first = ledger.problems.first { failures.append(first) }
            promotions += ledger.promotions
            hidden += ledger.hidden
        }
        #expect(failures.isEmpty, "\(failures.count) traces issued an ID twice; first: \(failures.prefix(3))")
        #expect(promotions > 100 && hidden > 1000, "the inputs promote and hide too rarely: \(promotions) promotions, \(hidden) hidden IDs")
    }

    @Test("The ledger catches an ID issued twice, by an admission or a promotion, and a shown ID that does not increase")
    func ledgerCatchesReuse() {
        var ledger = IDLedger()
        ledger.issue(ConnectionID(rawValue: 2), by: "an admission", at: "t")
        ledger.promoted(ConnectionID(rawValue: 2), at: "t")
        ledger.issue(ConnectionID(rawValue: 1), by: "an admission", at: "t")
        ledger.issue(ConnectionID(rawValue: ConnectionID.hiddenBase), by: "an admission", at: "t")
        ledger.issue(ConnectionID(rawValue: ConnectionID.hiddenBase), by: "an admission", at: "t")
        #expect(ledger.problems.count == 4, "\(ledger.problems)")
    }
}
