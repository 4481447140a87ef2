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

    @Test("A request due at the same time as the pending one keeps the pending one's trigger")
    func equalTimeKeepsThePending() {
        var s = Self.schedule()
        s.receive(.noDevice, at: .milliseconds(10))
        s.receive(.confirm(at: .milliseconds(30)), at: .milliseconds(12))
        #expect(s.pending?.trigger == .noDevice, "a request at the same time replaced the pending one")
        #expect(s.pending?.at == .milliseconds(30))
        s.receive(.hotplug(ports: ["1-1"]), at: .milliseconds(10))
        #expect(s.pending?.trigger == .noDevice)
        #expect(Self.drain(&s, at: .milliseconds(30)) == [.reconcile(.noDevice)])
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

    @Test("Random events and looks: nothing is due early, nothing asked for is forgotten, and ports and suspicions reach the next reconcile")
    func randomEventsKeepTheirPromises() {
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var s = Self.schedule()
            var now = Duration.zero
            var lastTick = Duration.zero
            // The earliest time a reconcile was asked for since the last one ran, and the ports
            // and suspicion since the last reconcile began.
            var owed: Duration?
            var ports: Set<String> = []
            var suspected = false
            for step in 0..<200 {
                now += .milliseconds(rng.next(below: 700))
                let at = "seed \(seed) step \(step)"
                switch rng.next(below: 5) {
                case 0:
                    let port = "1-\(rng.next(below: 4))"
                    s.receive(.hotplug(ports: [port]), at: now)
                    ports.insert(port)
                    owed = min(owed ?? .seconds(Int64.max), now + Self.debounce)
                case 1:
                    s.receive(.suspicion, at: now)
                    suspected = true
                    owed = min(owed ?? .seconds(Int64.max), now + Self.debounce)
                case 2:
                    s.receive(.noDevice, at: now)
                    owed = min(owed ?? .seconds(Int64.max), now + Self.debounce)
                case 3:
                    let when = now + .milliseconds(rng.next(below: 3000)) - .milliseconds(200)
                    s.receive(.confirm(at: when), at: now)
                    owed = min(owed ?? .seconds(Int64.max), max(when, now))
                default:
                    let deadline = s.nextDeadline
                    let actions = Self.drain(&s, at: now)
                    // Something is due exactly when the deadline has come.
                    #expect(actions.isEmpty == (deadline > now), "\(at)")
                    let reconciles = actions.filter { $0 != .tick }.count
                    let ticks = actions.count - reconciles
                    // One pending reconcile at most; it runs once what was asked for is due.
                    #expect(reconciles <= 1, "\(at)")
                    if let o = owed, o <= now { #expect(reconciles == 1, "\(at): asked for by \(o)") } else { #expect(reconciles == 0, "\(at)") }
                    if reconciles == 1 {
                        owed = nil
                        #expect(s.touchedPorts == ports && s.needsFullScan == suspected, "\(at)")
                        let everything = rng.chance(0.5)
                        s.reconcileBegan(readingEverything: everything)
                        ports = []
                        if everything { suspected = false }
                        #expect(s.touchedPorts.isEmpty && s.needsFullScan == suspected, "\(at)")
                    }
                    // A tick exactly when an interval has passed since the last, then one interval on.
                    #expect(ticks == (now >= lastTick + Self.interval ? 1 : 0), "\(at)")
                    if ticks == 1 { lastTick = now }
                    #expect(s.nextTick == lastTick + Self.interval, "\(at)")
                }
                #expect(s.nextDeadline == min(owed ?? .seconds(Int64.max), lastTick + Self.interval), "\(at)")
            }
        }
    }
}
