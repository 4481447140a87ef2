import Testing
@testable import AccessoryCore

/// Checks DESIGN.md's invariants 1–3 on a notification log, as it is delivered.
struct InvariantChecker {
    private(set) var connected: [ConnectionID: Accessory] = [:]
    private var ended = Set<ConnectionID>()
    private var lastID = ConnectionID.none
    private(set) var problems: [String] = []

    mutating func observe(_ event: AccessoryEvent) {
        switch event {
        case .connected(let a):
            let id = a.connectionID
            if id <= lastID { problems.append("ID \(id) admitted after \(lastID): not strictly increasing") }
            if connected[id] != nil || ended.contains(id) { problems.append("ID \(id) connected twice or reused") }
            lastID = max(lastID, id)
            connected[id] = a
        case .disconnected(let a, _):
            let id = a.connectionID
            if connected.removeValue(forKey: id) == nil { problems.append("ID \(id) disconnected without a live connection") }
            ended.insert(id)
        }
    }

    /// Invariant 1: the registry holds exactly one entry per live instance of the truth.
    mutating func expectEquals(_ registry: ConnectionRegistry, truth: [AccessoryDescriptor], at label: String) {
        let held = registry.accessories
        if Set(held.map(\.connectionID)) != Set(connected.keys) {
            problems.append("\(label): registry and notification log disagree")
        }
        let want = Set(truth.map(InstanceKey.init))
        let got = held.map { InstanceKey($0.descriptor) }
        if got.count != Set(got).count { problems.append("\(label): an instance is registered twice") }
        if Set(got) != want { problems.append("\(label): registry \(got.count) entries ≠ truth \(want.count)") }
    }
}

/// The fields the contract matches instances by.
struct InstanceKey: Hashable {
    var bus: Int, address: Int?, port: String, vendor: UInt16?, product: UInt16?, serial: String?
    init(_ d: AccessoryDescriptor) {
        (bus, address, port, vendor, product, serial) = (d.bus, d.address, d.port, d.vendor, d.product, d.serial)
    }
}

@Suite("Invariants under fault injection")
struct InvariantPropertyTests {
    /// Replays one generated, faulted trace and returns the invariant problems.
    static func check(seed: UInt64) -> [String] {
        var rng = SplitMix64(seed: seed)
        let config = TraceGenerator.Configuration(
            seed: seed, events: Int.random(in: 20...120, using: &rng), devices: Int.random(in: 1...6, using: &rng),
            buses: Int.random(in: 1...2, using: &rng), snapshotInterval: Int.random(in: 5...40, using: &rng),
            sleepProbability: 0.02, overflowProbability: 0.02)
        let faults = FaultInjector.Configuration(
            drop: Double.random(in: 0...0.3, using: &rng), duplicate: Double.random(in: 0...0.3, using: &rng),
            reorder: Double.random(in: 0...0.3, using: &rng), delay: Double.random(in: 0...0.2, using: &rng),
            wrapAddresses: rng.next() % 4 == 0)
        let records = FaultInjector.inject(faults, seed: seed ^ 0x5eed, into: TraceGenerator(config))
        var replayer = TraceReplayer()
        var checker = InvariantChecker()
        var last: [AccessoryDescriptor]?
        for (i, record) in records.enumerated() {
            for event in replayer.apply(record) { checker.observe(event) }
            if case .snapshot(let truth) = record.event {
                last = truth
                checker.expectEquals(replayer.registry, truth: truth, at: "seed \(seed) record \(i)")
            }
        }
        for event in replayer.finish() { checker.observe(event) }
        if let last { checker.expectEquals(replayer.registry, truth: last, at: "seed \(seed) end") }
        return checker.problems
    }

    @Test("Invariants 1–3 hold on 10,000 generated traces with drops, duplicates, reorders, delays and wraps")
    func tenThousandTraces() {
        var failures: [String] = []
        for seed in UInt64(1)...10_000 {
            let problems = Self.check(seed: seed)
            if !problems.isEmpty { failures.append(problems[0]) }
        }
        #expect(failures.count == 0, "traces broke an invariant; first: \(failures.prefix(3))")
    }

    @Test("The checker itself catches a reused ID and a missing device")
    func checkerCatchesBugs() {
        var checker = InvariantChecker()
        let a = Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: device(5))
        checker.observe(.connected(a))
        checker.observe(.disconnected(a, .unplugged))
        checker.observe(.connected(a))
        #expect(checker.problems.contains { $0.contains("reused") })
        var c2 = InvariantChecker()
        c2.expectEquals(ConnectionRegistry(), truth: [device(5)], at: "t")
        #expect(!c2.problems.isEmpty)
    }
}
