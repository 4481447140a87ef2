import AccessoryTraces
import Testing

@testable import AccessoryCore

/// The recovery ladder's pure parts: its steps, the reason a recovered connection ends with,
/// the link to the connection that comes back, and the per-port budget.
@Suite("Recovery")
struct RecoveryTests {
    /// Applies events at the given times and returns every notification.
    private func notifications(_ registry: inout ConnectionRegistry, _ timed: [(Double, HotplugEvent)]) -> [AccessoryEvent] {
        timed.flatMap { t, event in
            registry.now = .seconds(t)
            return registry.apply(event).events
        }
    }

    @Test("The ladder's steps are ordered reset < reauthorize < power-cycle < command, and their names round-trip")
    func steps() {
        #expect(RecoveryStep.allCases.sorted() == [.reset, .reauthorize, .powerCycle, .command])
        #expect(RecoveryStep.ladder(upTo: .reauthorize) == [.reset, .reauthorize])
        #expect(RecoveryStep.ladder(upTo: .reset) == [.reset])
        for step in RecoveryStep.allCases { #expect(RecoveryStep(name: step.name) == step) }
        #expect(RecoveryStep(name: "power-cycle") == .powerCycle)
        #expect(RecoveryStep(name: "powerCycle") == nil)
        #expect(DisconnectReason.recovered(.powerCycle).code == "recovered")
        #expect(DisconnectReason.recovered(.powerCycle).description == "recovered: port power cycle")
    }

    @Test("A connection under recovery ends as recovered(step), by a remove event or by eviction, and the same accessory coming back links to it after the link window")
    func reasonAndLink() throws {
        for ending in ["remove event", "NO_DEVICE"] {
            var r = ConnectionRegistry()
            let first = try firstAccessory(notifications(&r, [(0, .added(device(5)))]))
            r.expectRecovery(of: first.connectionID, step: .reset, until: .seconds(20))
            r.expectRecovery(of: first.connectionID, step: .powerCycle, until: .seconds(20))  // a later step replaces it
            var n: [AccessoryEvent]
            if ending == "remove event" {
                n = notifications(&r, [(1, removal(5))])
            } else {
                r.now = .seconds(1)
                n = r.evict(first.connectionID, reason: .ghostEvicted(.noDevice(operation: "GET_STATUS"))).map { [$0] } ?? []
            }
            n += notifications(&r, [(12, .added(device(6)))])
            #expect(n.first?.reason == .recovered(.powerCycle), "\(ending): \(n)")
            let back = n.compactMap { if case .connected(let a) = $0, a.descriptor.address == 6 { a } else { nil } }
            #expect(back.first?.previousConnectionID == first.connectionID, "\(ending): 11 s after, within the recovery's wait")
        }
    }

    @Test("Another accessory on the port never links to a recovered connection, nor does the same one after the wait; a shutdown stays a shutdown")
    func noFalseLinks() throws {
        var r = ConnectionRegistry()
        let first = try firstAccessory(notifications(&r, [(0, .added(device(5)))]))
        r.expectRecovery(of: first.connectionID, step: .reauthorize, until: .seconds(20))
        var n = notifications(&r, [(1, removal(5)), (2, .added(device(6, product: 0x0002, serial: "X")))])
        #expect(n.first?.reason == .recovered(.reauthorize))
        #expect(n.last?.accessory.previousConnectionID == nil)

        r = ConnectionRegistry()
        let second = try firstAccessory(notifications(&r, [(0, .added(device(5)))]))
        r.expectRecovery(of: second.connectionID, step: .powerCycle, until: .seconds(10))
        n = notifications(&r, [(1, removal(5)), (30, .added(device(6)))])
        #expect(n.last?.accessory.previousConnectionID == nil, "came back 29 s later, after the wait and the window")

        r = ConnectionRegistry()
        let third = try firstAccessory(notifications(&r, [(0, .added(device(5)))]))
        r.expectRecovery(of: third.connectionID, step: .reset, until: .seconds(10))
        #expect(r.shutdown().map(\.reason) == [.shutdown])
    }

    @Test("A recovery that ends before the connection does leaves it an ordinary connection: an unplug later is unplugged")
    func endedRecovery() throws {
        var r = ConnectionRegistry()
        let first = try firstAccessory(notifications(&r, [(0, .added(device(5)))]))
        r.expectRecovery(of: first.connectionID, step: .reset, until: .seconds(100))
        r.endRecovery(of: first.connectionID)
        let n = notifications(&r, [(50, removal(5)), (58, .added(device(6)))])
        #expect(n.first?.reason == .unplugged)
        #expect(n.last?.accessory.previousConnectionID == nil, "8 s later: only the link window counts again")
    }

    @Test("The budget never allows more than its limit in any window, and says when the port may go again (property, 300 seeds)")
    func budgetProperty() {
        for seed in 0..<300 {
            var rng = SplitMix64(seed: UInt64(seed))
            let limit = Int(rng.next() % 4)
            let window = Duration.seconds(Int64(1 + rng.next() % 50))
            var budget = RecoveryBudget(limit: limit, window: window)
            var granted: [String: [Duration]] = [:]
            var now = Duration.zero
            for _ in 0..<60 {
                now += .milliseconds(Int64(rng.next() % 8000))
                let port = ["1-1", "1-2", "2-1.4"][Int(rng.next() % 3)]
                let expected = granted[port, default: []].filter { now - $0 < window }.count < limit
                #expect(budget.remaining(port: port, at: now) == limit - granted[port, default: []].filter { now - $0 < window }.count)
                let next = budget.nextAllowed(port: port, at: now)
                #expect(limit == 0 ? next == nil : (next == now) == expected, "seed \(seed)")
                if let next, next > now {
                    #expect(budget.remaining(port: port, at: next) >= 1, "seed \(seed): allowed at \(next)")
                }
                let spent = budget.spend(port: port, at: now)
                #expect(spent == expected, "seed \(seed) port \(port) at \(now)")
                if spent { granted[port, default: []].append(now) }
                // The invariant itself: no window holds more than the limit.
                let times = granted[port, default: []]
                for t in times { #expect(times.filter { $0 >= t && $0 - t < window }.count <= limit, "seed \(seed)") }
            }
        }
    }

    @Test("A policy clamps what makes no sense: at least one timeout, a budget of at least zero")
    func policy() {
        let p = RecoveryPolicy(afterTimeouts: 0, budget: -2)
        #expect(p.afterTimeouts == 1 && p.budget == 0 && p.upTo == .powerCycle && p.per == .seconds(3600))
        #expect(RecoveryBudget(p).limit == 0)
        #expect(RecoveryPolicy().afterTimeouts == 3)
    }
}
