import Testing
@testable import AccessoryCore
@testable import AccessoryTraces
import AccessoryTestSupport

/// Checks DESIGN.md's invariants 1–3 on a notification log, as it is delivered, and that
/// every re-enumeration link names a connection that ended earlier on the same port, the
/// same physical accessory (no manager switched modes here), and is used once.
struct InvariantChecker {
    private(set) var connected: [ConnectionID: Accessory] = [:]
    private var ended = Set<ConnectionID>()
    /// Ended connections no link has named yet.
    private var linkable: [ConnectionID: Accessory] = [:]
    private(set) var links = 0
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
            if let p = a.previousConnectionID {
                links += 1
                if let old = linkable.removeValue(forKey: p) {
                    let (x, y) = (old.descriptor, a.descriptor)
                    if x.bus != y.bus || x.port != y.port { problems.append("ID \(id) links to \(p) on another port") }
                    if x.vendor != y.vendor || x.product != y.product || (x.serial != nil && y.serial != nil && x.serial != y.serial) {
                        problems.append("ID \(id) links to \(p), another accessory")
                    }
                } else {
                    problems.append("ID \(id) links to \(p), which has not ended or was linked already")
                }
            }
        case .disconnected(let a, _):
            let id = a.connectionID
            if connected.removeValue(forKey: id) == nil { problems.append("ID \(id) disconnected without a live connection") }
            ended.insert(id)
            linkable[id] = a
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
        var replayer = TracePlayback()
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

    @Test("Invariants 1–3 hold on 10,000 generated traces (1,000 in the quick run) with drops, duplicates, reorders, delays and wraps")
    func tenThousandTraces() {
        var failures: [String] = []
        for seed in UInt64(1)...UInt64(TestScale.count(10_000)) {
            let problems = Self.check(seed: seed)
            if !problems.isEmpty { failures.append(problems[0]) }
        }
        #expect(failures.count == 0, "traces broke an invariant; first: \(failures.prefix(3))")
    }

    @Test("Links appear in generated traces, and the checker catches a link to a live or foreign connection")
    func linksAreChecked() {
        var total = 0
        for seed in UInt64(1)...200 {
            var replayer = TracePlayback()
            var checker = InvariantChecker()
            let records = TraceGenerator(.init(seed: seed, events: 80, devices: 3, buses: 1, snapshotInterval: 20))
            for record in records { for event in replayer.apply(record) { checker.observe(event) } }
            #expect(checker.problems.isEmpty, "seed \(seed): \(checker.problems.prefix(2))")
            total += checker.links
        }
        #expect(total > 0, "no generated re-plug was linked")
        var c = InvariantChecker()
        let a = Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: device(5))
        c.observe(.connected(a))
        c.observe(.connected(Accessory(connectionID: ConnectionID(rawValue: 2), descriptor: device(6, port: "1-2"), previousConnectionID: a.connectionID)))
        #expect(c.problems.contains { $0.contains("has not ended") })
        c.observe(.disconnected(a, .unplugged))
        c.observe(.connected(Accessory(connectionID: ConnectionID(rawValue: 3), descriptor: device(7, port: "1-2"), previousConnectionID: a.connectionID)))
        #expect(c.problems.contains { $0.contains("another port") })
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
