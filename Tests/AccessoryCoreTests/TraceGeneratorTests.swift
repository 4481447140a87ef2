import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Trace generator")
struct TraceGeneratorTests {
    private let config = TraceGenerator.Configuration(
        seed: 5, events: 20_000, devices: 12, buses: 2, snapshotInterval: 500,
        sleepProbability: 0.01, overflowProbability: 0.01)

    @Test("The same seed gives the same trace; another seed another")
    func determinism() {
        let a = Array(TraceGenerator(config))
        #expect(a == Array(TraceGenerator(config)))
        var other = config
        other.seed = 6
        #expect(a != Array(TraceGenerator(other)))
    }

    @Test("Exactly the asked number of events, snapshots at the start, every interval and the end")
    func shape() {
        let records = Array(TraceGenerator(config))
        let events = records.filter { if case .snapshot = $0.event { false } else { true } }
        #expect(events.count == config.events)
        guard case .snapshot = records.first?.event, case .snapshot = records.last?.event else {
            Issue.record("a generated trace starts and ends with a snapshot")
            return
        }
        var gap = 0
        var maxGap = 0
        for r in records {
            if case .snapshot = r.event { gap = 0 } else { gap += 1 }
            maxGap = max(maxGap, gap)
        }
        #expect(maxGap <= config.snapshotInterval + 2)
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.t < $1.t })
        #expect(records.map(\.line) == Array(1...records.count))
        for kind in [HotplugEvent.sleep, .wake, .overflow] { #expect(records.contains { $0.event == kind }) }
    }

    @Test("Addresses are allocated like the kernel: the next free one, wrapping after 127")
    func addresses() {
        var lastAddress: [Int: Int] = [:]
        var wrapped = false
        var reusedByAnother = false
        var owner: [DeviceKey: String] = [:]
        for r in TraceGenerator(config) {
            switch r.event {
            case .added(let d):
                let a = d.address!
                #expect((2...127).contains(a))
                if let last = lastAddress[d.bus], a < last { wrapped = true }
                lastAddress[d.bus] = a
                let key = d.key!
                if let previous = owner[key], previous != d.port { reusedByAnother = true }
                owner[key] = d.port
            case .snapshot(let devices):
                for bus in Set(devices.map(\.bus)) {
                    let addresses = devices.filter { $0.bus == bus }.map { $0.address! }
                    #expect(Set(addresses).count == addresses.count, "one device per address")
                }
                let ports = devices.map(\.portKey)
                #expect(Set(ports).count == ports.count, "one device per port")
            default:
                break
            }
        }
        #expect(wrapped && reusedByAnother)
    }

    @Test("Snapshots are the truth: replaying the exact events keeps the registry in step")
    func snapshotsAreTruth() {
        var noSilentLoss = config
        noSilentLoss.sleepProbability = 0
        noSilentLoss.overflowProbability = 0
        var replayer = TracePlayback()
        for r in TraceGenerator(noSilentLoss) {
            let events = replayer.apply(r)
            if case .snapshot = r.event, r.line > 1 {
                #expect(events.isEmpty, "line \(r.line): the registry already matched the snapshot")
            }
        }
    }

    @Test("A long trace streams without holding its records")
    func streaming() {
        var generator = TraceGenerator(.init(seed: 1, events: 200_000, devices: 100, buses: 4, snapshotInterval: 1000))
        var count = 0
        while generator.next() != nil { count += 1 }
        #expect(count == 200_000 + 201)
        #expect(generator.next() == nil)
    }
}
