import AccessoryCore
import AccessoryKit
import AccessoryTraces
import CoreMetrics
import Prometheus
import Testing
@testable import AccessoryMetrics

@Suite("AccessoryMetrics: the exposition's names, labels and types")
struct AccessoryMetricsTests {
    static func accessory(_ id: UInt64, vendor: UInt16 = 0x1209, product: UInt16 = 0x0001, serial: String? = "SN1", address: Int = 5) -> Accessory {
        Accessory(
            connectionID: ConnectionID(rawValue: id),
            descriptor: AccessoryDescriptor(bus: 1, address: address, port: "1-1", vendor: vendor, product: product, serial: serial))
    }

    @Test("a fresh exposition has every metric of the contract, with its type and help, the counters at 0")
    func contractNamesAndTypes() {
        let metrics = AccessoryMetrics()
        let e = Exposition(metrics.exposition())
        #expect(e.malformed.isEmpty, "\(e.malformed)")
        #expect(e.types["accessory_disconnects_total"] == "counter")
        #expect(e.types["accessory_recoveries_total"] == "counter")
        #expect(e.types["accessory_recovery_seconds"] == "histogram")
        #expect(e.types["accessory_hotplug_events_total"] == "counter")
        #expect(e.types["accessory_sessions_open"] == "gauge")
        for name in e.types.keys { #expect(e.helps[name] != nil, "\(name) has no HELP") }
        for reason in ["unplugged", "ghost-evicted", "recovered", "shutdown"] {
            #expect(e.value("accessory_disconnects_total", ["reason": reason]) == 0, "\(reason)")
        }
        for step in ["reset", "reauthorize", "power-cycle", "command"] {
            for outcome in ["recovered", "failed"] {
                #expect(e.value("accessory_recoveries_total", ["step": step, "outcome": outcome]) == 0)
            }
        }
        #expect(e.value("accessory_recovery_seconds_count") == 0)
        #expect(e.value("accessory_recovery_seconds_bucket", ["le": "+Inf"]) == 0)
        #expect(e.value("accessory_hotplug_events_total", ["kind": "arrived"]) == 0)
        #expect(e.value("accessory_hotplug_events_total", ["kind": "left"]) == 0)
        #expect(e.value("accessory_sessions_open") == 0)
    }

    @Test("connects and disconnects move accessory_connected by VID:PID, and count each reason's code")
    func eventsAreCounted() {
        let metrics = AccessoryMetrics()
        let a = Self.accessory(1), b = Self.accessory(2, serial: "SN2", address: 6), c = Self.accessory(3, vendor: 0x18d1, product: 0x2d01, serial: nil)
        for event in [AccessoryEvent.connected(a), .connected(b), .connected(c), .disconnected(a, .unplugged),
                      .disconnected(c, .ghostEvicted(.absentFromSnapshot)), .disconnected(b, .shutdown)] {
            metrics.record(event)
        }
        metrics.record(.connected(Self.accessory(4, address: 7)))
        let e = Exposition(metrics.exposition())
        #expect(e.types["accessory_connected"] == "gauge")
        #expect(e.value("accessory_connected", ["vendor": "1209", "product": "0001"]) == 1)
        #expect(e.value("accessory_connected", ["vendor": "18d1", "product": "2d01"]) == 0)
        #expect(e.value("accessory_disconnects_total", ["reason": "unplugged"]) == 1)
        #expect(e.value("accessory_disconnects_total", ["reason": "ghost-evicted"]) == 1)
        #expect(e.value("accessory_disconnects_total", ["reason": "shutdown"]) == 1)
        #expect(e.value("accessory_disconnects_total", ["reason": "recovered"]) == 0)
    }

    @Test("no label names or holds a connection ID, a serial, an address, a bus or a port")
    func noIdentityInLabels() {
        let metrics = AccessoryMetrics()
        var rng = SplitMix64(seed: 34)
        for id in 1...200 as ClosedRange<UInt64> {
            let a = Self.accessory(id + 1000, product: UInt16(rng.next() % 4), serial: "SERIAL-\(rng.next())", address: Int(90 + id % 30))
            metrics.record(.connected(a))
            if rng.next() % 2 == 0 { metrics.record(.disconnected(a, .unplugged)) }
        }
        metrics.record(hotplugArrived: 200, hotplugLeft: 100, sessionsOpen: 3)
        metrics.recorded(recovery: [("reset", false), ("power-cycle", true)], duration: .seconds(3))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let e = Exposition(text)
        let allowed: Set<String> = ["vendor", "product", "reason", "step", "outcome", "kind", "le"]
        let used = Set(e.samples.flatMap(\.labels.keys))
        #expect(used.isSubset(of: allowed), "\(used.subtracting(allowed))")
        #expect(!text.contains("SERIAL-"))
        // One accessory_connected series per VID:PID seen (4), not one per connection.
        #expect(e.samples.filter { $0.name == "accessory_connected" }.count == 4)
        #expect(e.samples.count < 60, "\(e.samples.count) series")
    }

    @Test("accessory_connected equals the accessories connected by VID:PID, for random event streams")
    func connectedGaugeProperty() {
        for seed in 0..<50 as Range<UInt64> {
            var rng = SplitMix64(seed: seed)
            let metrics = AccessoryMetrics()
            var live: [Accessory] = []
            for id in 1...100 as ClosedRange<UInt64> {
                if live.isEmpty || rng.next() % 3 != 0 {
                    let a = Self.accessory(id, product: UInt16(rng.next() % 3))
                    live.append(a)
                    metrics.record(.connected(a))
                } else {
                    let gone = live.remove(at: Int(rng.next() % UInt64(live.count)))
                    metrics.record(.disconnected(gone, rng.next() % 2 == 0 ? .unplugged : .shutdown))
                }
            }
            let e = Exposition(metrics.exposition())
            for product in 0..<3 as Range<UInt16> where live.contains(where: { $0.descriptor.product == product }) || e.value("accessory_connected", ["vendor": "1209", "product": String(format4: product)]) != nil {
                let expected = Double(live.filter { $0.descriptor.product == product }.count)
                #expect(e.value("accessory_connected", ["vendor": "1209", "product": String(format4: product)]) == expected, "seed \(seed)")
            }
        }
    }

    @Test("hotplug totals only ever grow the counters, by what is new; sessions_open is set")
    func hotplugTotals() {
        let metrics = AccessoryMetrics()
        metrics.record(hotplugArrived: 3, hotplugLeft: 1, sessionsOpen: 2)
        metrics.record(hotplugArrived: 5, hotplugLeft: 1, sessionsOpen: 0)
        metrics.record(hotplugArrived: 4, hotplugLeft: 2, sessionsOpen: 1)  // an older reading: no decrease
        let e = Exposition(metrics.exposition())
        #expect(e.value("accessory_hotplug_events_total", ["kind": "arrived"]) == 5)
        #expect(e.value("accessory_hotplug_events_total", ["kind": "left"]) == 2)
        #expect(e.value("accessory_sessions_open") == 1)
    }

    @Test("a recovery counts each step it tried by outcome, and its duration in the histogram")
    func recoveries() {
        let metrics = AccessoryMetrics()
        metrics.recorded(recovery: [("reset", false), ("reauthorize", false), ("power-cycle", true)], duration: .milliseconds(7500))
        metrics.recorded(recovery: [("reset", true)], duration: .milliseconds(300))
        metrics.recorded(recovery: [("bogus", true)], duration: .seconds(1))
        let e = Exposition(metrics.exposition())
        #expect(e.value("accessory_recoveries_total", ["step": "reset", "outcome": "failed"]) == 1)
        #expect(e.value("accessory_recoveries_total", ["step": "reset", "outcome": "recovered"]) == 1)
        #expect(e.value("accessory_recoveries_total", ["step": "reauthorize", "outcome": "failed"]) == 1)
        #expect(e.value("accessory_recoveries_total", ["step": "power-cycle", "outcome": "recovered"]) == 1)
        #expect(e.value("accessory_recoveries_total", ["step": "command", "outcome": "recovered"]) == 0)
        #expect(!e.samples.contains { $0.labels["step"] == "bogus" })
        #expect(e.value("accessory_recovery_seconds_count") == 3)
        #expect(e.value("accessory_recovery_seconds_bucket", ["le": "0.5"]) == 1)
        #expect(e.value("accessory_recovery_seconds_bucket", ["le": "10.0"]) == 3)
        #expect(abs((e.value("accessory_recovery_seconds_sum") ?? 0) - 8.8) < 1e-6)
    }

    @Test("swift-metrics bootstrapped with the factory lands in the same exposition")
    func swiftMetricsFactory() {
        let metrics = AccessoryMetrics()
        let counter = CoreMetrics.Counter(label: "app_requests_total", dimensions: [("kind", "x")], factory: metrics.factory)
        counter.increment(by: 4)
        let e = Exposition(metrics.exposition())
        #expect(e.value("app_requests_total", ["kind": "x"]) == 4)
        #expect(e.value("accessory_sessions_open") == 0)
    }
}

extension String {
    /// A 16-bit ID as four lower-case hex digits.
    init(format4 id: UInt16) {
        let digits = String(id, radix: 16)
        self = String(repeating: "0", count: 4 - digits.count) + digits
    }
}
