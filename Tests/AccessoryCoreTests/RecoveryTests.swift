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

    // MARK: Automatic recovery

    private func accessory(_ id: UInt64, port: String, serial: String = "SN") -> Accessory {
        Accessory(
            connectionID: ConnectionID(rawValue: id),
            descriptor: AccessoryDescriptor(bus: 1, address: Int(id), port: port, vendor: 0x1209, product: 1, serial: serial))
    }

    @Test("A timeout streak completes at its limit and starts again; a transfer that works resets it")
    func timeoutStreak() {
        var streak = TimeoutStreak(limit: 3)
        let r1 = streak.timedOut()
        let r2 = streak.timedOut()
        #expect(r1 == nil && r2 == nil)
        streak.succeeded()
        let r3 = streak.timedOut()
        let r4 = streak.timedOut()
        #expect(r3 == nil && r4 == nil)
        let r5 = streak.timedOut()
        #expect(r5 == 3)
        let r6 = streak.timedOut()
        #expect(streak.count == 1 && r6 == nil, "counting starts again after a streak")
        #expect(TimeoutStreak(limit: 0).limit == 1)
    }

    @Test("Timeouts ask for the ladder once per port at a time, within the budget; beyond it the skip says when the port may go again")
    func schedulerTimeouts() {
        var scheduler = RecoveryScheduler(policy: RecoveryPolicy(upTo: .reauthorize, budget: 1, per: .seconds(60)))
        let a = accessory(1, port: "1-1")
        let first = scheduler.timedOut(3, on: 0x81, of: a, at: .seconds(1))
        #expect(first == .recover(a, trigger: "3 timeouts on 0x81"))
        #expect(scheduler.steps(for: first!) == [.reset, .reauthorize])
        // Under way: another streak on the port starts nothing, not even a skip.
        let r7 = scheduler.timedOut(3, on: 0x02, of: a, at: .seconds(2))
        #expect(r7 == nil)
        let begun = scheduler.begin(port: "1-1")
        #expect(!begun, "a requested recovery waits its turn too")
        scheduler.finished(port: "1-1")
        let r8 = scheduler.timedOut(1, on: 0x02, of: a, at: .seconds(3))
        #expect(r8 == .budgetSpent(a, trigger: "1 timeout on 0x02", nextAllowed: .seconds(61)))
        // Another port has its own budget; after the window the first goes again.
        let b = accessory(2, port: "1-2")
        let r9 = scheduler.timedOut(3, on: 0x81, of: b, at: .seconds(4))
        #expect(r9 == .recover(b, trigger: "3 timeouts on 0x81"))
        let r10 = scheduler.timedOut(3, on: 0x81, of: a, at: .seconds(61))
        #expect(r10 == .recover(a, trigger: "3 timeouts on 0x81"))
        // No policy, or one without timeouts: nothing.
        var none = RecoveryScheduler(policy: nil)
        let r11 = none.timedOut(3, on: 0x81, of: a, at: .zero)
        #expect(r11 == nil)
        var vanishedOnly = RecoveryScheduler(policy: RecoveryPolicy(afterTimeouts: nil, vanishedFor: .seconds(10)))
        let r12 = vanishedOnly.timedOut(3, on: 0x81, of: a, at: .zero)
        #expect(r12 == nil)
    }

    @Test("A vanished accessory's port is power-cycled after the wait, unless something arrives there; recovered and shut-down connections start no wait")
    func schedulerVanished() {
        var scheduler = RecoveryScheduler(policy: RecoveryPolicy(vanishedFor: .seconds(10), budget: 1))
        let a = accessory(1, port: "1-1"), b = accessory(2, port: "1-2"), c = accessory(3, port: "1-3")
        scheduler.disconnected(a, reason: .unplugged, at: .seconds(1))
        scheduler.disconnected(b, reason: .ghostEvicted(.absentFromSnapshot), at: .seconds(2))
        scheduler.disconnected(c, reason: .recovered(.reset), at: .seconds(2))
        scheduler.disconnected(c, reason: .shutdown, at: .seconds(2))
        #expect(scheduler.nextDeadline == .seconds(11))
        let r13 = scheduler.due(at: .seconds(10))
        #expect(r13.isEmpty)
        // Something else arrives on 1-2: its wait ends.
        scheduler.connected(accessory(4, port: "1-2", serial: "OTHER"))
        let due = scheduler.due(at: .seconds(12))
        #expect(due == [.bringBack(a, trigger: "vanished for 10 s")])
        #expect(scheduler.steps(for: due[0]) == [.powerCycle])
        #expect(scheduler.nextDeadline == nil)
        scheduler.finished(port: "1-1")
        // It vanishes again: the budget of 1 is spent, reported once, and nothing waits.
        scheduler.disconnected(a, reason: .unplugged, at: .seconds(20))
        let r14 = scheduler.due(at: .seconds(30))
        #expect(r14 == [.budgetSpent(a, trigger: "vanished for 10 s", nextAllowed: .seconds(3612))])
        let r15 = scheduler.due(at: .seconds(100))
        #expect(scheduler.nextDeadline == nil && r15.isEmpty)
        // A ladder that stops below the power cycle cannot bring anything back: no wait.
        var low = RecoveryScheduler(policy: RecoveryPolicy(upTo: .reauthorize, vanishedFor: .seconds(1)))
        low.disconnected(a, reason: .unplugged, at: .zero)
        #expect(low.nextDeadline == nil)
        #expect(RecoveryScheduler.seconds(.milliseconds(1500)) == "1.5 s" && RecoveryScheduler.seconds(.milliseconds(250)) == "0.25 s")
    }

    @Test("The same accessory back after a vanished connection's wait links to it while a recovery brings it back, and not without one")
    func returnLink() throws {
        var registry = ConnectionRegistry()
        let first = try firstAccessory(notifications(&registry, [(0, .added(device(5, port: "1-4")))]))
        _ = notifications(&registry, [(1, removal(5, port: "1-4"))])
        var linked = registry
        linked.now = .seconds(12)
        linked.expectReturn(of: first, until: .seconds(30))
        let again = notifications(&linked, [(20, .added(device(6, port: "1-4")))])
        #expect(again.first?.accessory.previousConnectionID == first.connectionID, "\(again)")
        let unlinked = notifications(&registry, [(20, .added(device(6, port: "1-4")))])
        #expect(unlinked.first?.accessory.previousConnectionID == nil, "\(unlinked)")
    }

    @Test("The command-line options make a policy, and each bad combination is refused with the option it names")
    func policyFromOptions() throws {
        #expect(try RecoveryPolicy.fromOptions(recover: false, upTo: nil, vanishedSeconds: nil) == nil)
        #expect(try RecoveryPolicy.fromOptions(recover: true, upTo: nil, vanishedSeconds: nil) == RecoveryPolicy())
        let refined = try #require(try RecoveryPolicy.fromOptions(recover: true, upTo: "reauthorize", vanishedSeconds: 2.5))
        #expect(refined.upTo == .reauthorize)
        #expect(refined.vanishedFor == .milliseconds(2500))
        let refused: [(Bool, String?, Double?, String)] = [
            (false, "reset", nil, "need --recover"), (false, nil, 3, "need --recover"),
            (true, "command", nil, "not 'command'"), (true, "sideways", nil, "must be one of reset, reauthorize, power-cycle"),
            (true, nil, 0, "--recover-vanished must be"), (true, nil, 86_401, "--recover-vanished must be"),
            (true, nil, .nan, "--recover-vanished must be"),
        ]
        for (recover, upTo, seconds, words) in refused {
            #expect {
                try RecoveryPolicy.fromOptions(recover: recover, upTo: upTo, vanishedSeconds: seconds)
            } throws: { error in
                (error as? RecoveryPolicy.OptionError)?.description.contains(words) == true
            }
        }
    }
}
