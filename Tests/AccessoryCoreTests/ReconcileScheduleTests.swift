import AccessoryTraces
import Testing
@testable import AccessoryCore

/// The manager's schedule, as a value: events in, what is due out, with no clock.
@Suite("Reconcile schedule")
struct ReconcileScheduleTests {
    static let interval = Duration.seconds(2)
    static let debounce = Duration.milliseconds(20)

    static func schedule(at now: Duration = .zero) -> ReconcileSchedule {
        ReconcileSchedule(now: now, interval: interval, debounce: debounce)
    }

    /// Everything due by `now`, in order.
    static func drain(_ s: inout ReconcileSchedule, at now: Duration) -> [ReconcileSchedule.Action] {
        var actions: [ReconcileSchedule.Action] = []
        while let a = s.due(at: now) { actions.append(a) }
        return actions
    }

    @Test("A storm of hotplug events is one debounced reconcile, after the first event's debounce, reading every port named")
    func stormIsOneReconcile() {
        var s = Self.schedule()
        s.receive(.hotplug(ports: ["1-1"]), at: .milliseconds(100))
        s.receive(.hotplug(ports: ["1-2", "1-1"]), at: .milliseconds(110))
        s.receive(.hotplug(ports: ["1-3"]), at: .milliseconds(119))
        #expect(s.nextDeadline == .milliseconds(120))
        #expect(Self.drain(&s, at: .milliseconds(119)).isEmpty)
        #expect(Self.drain(&s, at: .milliseconds(120)) == [.reconcile(.debounced)])
        #expect(s.touchedPorts == ["1-1", "1-2", "1-3"])
        s.reconcileBegan(readingEverything: false)
        #expect(s.touchedPorts.isEmpty)
        #expect(s.nextDeadline == Self.interval)
    }

    @Test("A suspicion makes the next reconcile read everything, until one that reads everything begins")
    func suspicionNeedsFullScan() {
        var s = Self.schedule()
        s.receive(.suspicion, at: .zero)
        #expect(s.needsFullScan)
        s.reconcileBegan(readingEverything: false)
        #expect(s.needsFullScan, "a partial look does not clear it")
        s.reconcileBegan(readingEverything: true)
        #expect(!s.needsFullScan)
    }

    @Test("The earliest request wins and keeps its trigger; a later one waits behind it")
    func earliestWins() {
        var s = Self.schedule()
        s.receive(.confirm(at: .milliseconds(500)), at: .zero)
        s.receive(.noDevice, at: .milliseconds(10))
        #expect(s.pending?.trigger == .noDevice)
        #expect(s.pending?.at == .milliseconds(30))
        s.receive(.confirm(at: .milliseconds(900)), at: .milliseconds(11))
        #expect(s.pending?.at == .milliseconds(30), "a later confirm does not replace an earlier reconcile")
        // A confirm in the past is due now, not earlier.
        var t = Self.schedule()
        t.receive(.confirm(at: .milliseconds(5)), at: .milliseconds(50))
        #expect(t.pending?.at == .milliseconds(50))
    }

    @Test("Ticks come every interval, counted from the last; a reconcile due no later than the tick runs first")
    func ticksAndOrder() {
        var s = Self.schedule()
        #expect(Self.drain(&s, at: .milliseconds(1999)).isEmpty)
        s.receive(.confirm(at: .seconds(2)), at: .seconds(1))
        #expect(Self.drain(&s, at: .seconds(2)) == [.reconcile(.confirm), .tick])
        #expect(s.nextTick == .seconds(4))
        // A late look (the host slept past several ticks) runs one tick, not one per interval missed.
        #expect(Self.drain(&s, at: .seconds(11)) == [.tick])
        #expect(s.nextTick == .seconds(13))
    }

    /// The manager's scheduling before this type, as it was written there: one pending
    /// deadline kept if no later, a tick every interval, due work run in time order.
    struct Model {
        var pending: (at: Duration, trigger: ReconcileTrigger)?
        var nextTick: Duration

        mutating func request(_ trigger: ReconcileTrigger, at: Duration?, now: Duration) {
            let due = max(at ?? now + ReconcileScheduleTests.debounce, now)
            if let p = pending, !(due < p.at) { return }
            pending = (due, trigger)
        }

        mutating func runDue(until now: Duration) -> [ReconcileSchedule.Action] {
            var out: [ReconcileSchedule.Action] = []
            while true {
                if let p = pending, p.at <= now, p.at <= nextTick {
                    pending = nil
                    out.append(.reconcile(p.trigger))
                } else if nextTick <= now {
                    nextTick = now + ReconcileScheduleTests.interval
                    out.append(.tick)
                } else {
                    return out
                }
            }
        }
    }

    @Test("Random events and looks: the same actions, in the same order, as the manager's scheduling before it became a value")
    func matchesTheOldScheduling() {
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var s = Self.schedule()
            var m = Model(pending: nil, nextTick: Self.interval)
            var now = Duration.zero
            for step in 0..<200 {
                now += .milliseconds(rng.next(below: 700))
                switch rng.next(below: 5) {
                case 0:
                    s.receive(.hotplug(ports: ["1-\(rng.next(below: 4))"]), at: now)
                    m.request(.debounced, at: nil, now: now)
                case 1:
                    s.receive(.suspicion, at: now)
                    m.request(.debounced, at: nil, now: now)
                case 2:
                    s.receive(.noDevice, at: now)
                    m.request(.noDevice, at: nil, now: now)
                case 3:
                    let at = now + .milliseconds(rng.next(below: 3000)) - .milliseconds(200)
                    s.receive(.confirm(at: at), at: now)
                    m.request(.confirm, at: at, now: now)
                default:
                    let expected = m.runDue(until: now)
                    #expect(Self.drain(&s, at: now) == expected, "seed \(seed) step \(step)")
                }
                #expect(s.nextDeadline == min(m.pending?.at ?? m.nextTick, m.nextTick), "seed \(seed) step \(step)")
            }
        }
    }
}
