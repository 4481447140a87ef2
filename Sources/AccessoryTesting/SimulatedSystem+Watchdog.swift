import AccessoryKit
import Dispatch

/// The watchdog: it ends the waits that nothing in the simulation can end. It looks every
/// so often while tasks sleep on the clock or replayed transfers are stranded (held because
/// their recording cannot answer them). Once nothing has happened in the simulation for
/// ``stallLimit`` of real time (nothing moved, no transfer was asked or answered, and no
/// stranded transfer came to be awaited or stopped being so):
/// - the stranded transfers someone awaits fail, each with its `.io` error naming its
///   endpoint and the recording's last transfer there (a stream's read-ahead that nobody
///   reads is left waiting);
/// - else the tasks sleeping on the clock fail, with an error that says how to move it.
extension SimulatedSystem {
    /// How long nothing may happen in the simulation, in real time, before the watchdog ends
    /// what waits.
    var stallLimit: Duration {
        get { state.withLock { $0.stallLimit } }
        set { state.withLock { $0.stallLimit = newValue } }
    }

    /// Says that something happened: the watchdog gives sleepers another ``stallLimit``.
    func noteActivity() {
        state.withLock { $0.activity &+= 1 }
    }

    /// `endpoints` holds a stranded transfer now: the watchdog keeps an eye on it.
    func noteStranded(_ endpoints: SimulatedEndpoints) {
        state.withLock { s in
            s.strandHolders[ObjectIdentifier(endpoints)] = WeakEndpoints(target: endpoints)
            s.strandings &+= 1
        }
        startWatchdog()
    }

    /// Starts the watchdog unless it runs; it stops once nobody sleeps on the clock and no
    /// transfer is stranded.
    func startWatchdog() {
        let (start, seen) = state.withLock { s in
            defer { s.watchdogRunning = true }
            return (!s.watchdogRunning, s.activity)
        }
        if start { watch(seen: seen, since: .now, awaited: 0) }
    }

    /// What the watchdog does after a look.
    private enum Verdict {
        case stop
        /// Look again later, with nothing happening since `since` (when the count was `seen`).
        case wait(seen: UInt64, since: ContinuousClock.Instant)
        case endStranded([SimulatedEndpoints])
        case failSleepers([Sleeper], now: Duration)
    }

    /// Looks again a little later: ends what waits if nothing happened since `since` (when
    /// the activity count was `seen` and `awaited` stranded transfers were awaited) for
    /// ``stallLimit``.
    private func watch(seen: UInt64, since: ContinuousClock.Instant, awaited: Int) {
        let limit = stallLimit
        let step = min(limit / 4, .milliseconds(500))
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(step / .nanoseconds(1)))) { [weak self] in
            guard let self else { return }
            let looked = ContinuousClock.now
            let (holders, strandings) = state.withLock { s in (s.strandHolders.values.compactMap(\.target), s.strandings) }
            // Asked outside the lock: the checks take the sessions' locks.
            let counts = holders.map { $0.strandedCount() }
            let awaitedNow = counts.reduce(0) { $0 + $1.awaited }
            let verdict: Verdict = state.withLock { s in
                if s.strandings == strandings {
                    for (holder, count) in zip(holders, counts) where count.stranded == 0 { s.strandHolders[ObjectIdentifier(holder)] = nil }
                }
                s.strandHolders = s.strandHolders.filter { $0.value.target != nil }
                if s.sleepers.isEmpty && s.strandHolders.isEmpty {
                    s.watchdogRunning = false
                    return .stop
                }
                // A read that comes to await a stranded transfer counts as something happening.
                if s.activity != seen || awaitedNow != awaited { return .wait(seen: s.activity, since: looked) }
                guard since.duration(to: looked) >= s.stallLimit else { return .wait(seen: seen, since: since) }
                if awaitedNow > 0 { return .endStranded(holders) }
                if s.sleepers.isEmpty { return .wait(seen: seen, since: since) }
                defer { s.sleepers.removeAll() }
                return .failSleepers(s.sleepers, now: s.now)
            }
            switch verdict {
            case .stop:
                return
            case .wait(let seen, let since):
                watch(seen: seen, since: since, awaited: awaitedNow)
            case .endStranded(let holders):
                for holder in holders { _ = holder.endStranded() }
                watch(seen: state.withLock { $0.activity }, since: .now, awaited: 0)
            case .failSleepers(let stuck, let now):
                for sleeper in stuck {
                    sleeper.continuation.resume(throwing: Self.stalled(until: sleeper.deadline, now: now, limit: limit))
                }
                watch(seen: state.withLock { $0.activity }, since: .now, awaited: awaitedNow)
            }
        }
    }

    /// What a sleep on a clock that nothing moves ends with.
    static func stalled(until deadline: Duration, now: Duration, limit: Duration) -> AccessoryError {
        AccessoryError(
            .timeout,
            "this call waits on the simulated clock until \(deadline) (it is at \(now)), and nothing has moved the clock "
                + "for \(limit) of real time: only SimulatedUSB.advance(by:) moves it. Run the call in a task "
                + "(let call = Task { ... }), call usb.advance(by:) while it waits, then await call.value",
            operation: "simulated clock")
    }
}
