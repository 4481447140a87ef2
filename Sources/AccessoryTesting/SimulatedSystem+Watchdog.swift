import AccessoryKit
import Dispatch

/// The watchdog: it ends sleeps on the clock that nothing can end. When tasks sleep on the
/// clock and nothing happens in the simulation for ``stallLimit`` of real time, they fail
/// with an error that says how to move the clock.
extension SimulatedSystem {
    /// How long tasks may sleep on the clock with nothing happening in the simulation, in
    /// real time, before they fail.
    var stallLimit: Duration {
        get { state.withLock { $0.stallLimit } }
        set { state.withLock { $0.stallLimit = newValue } }
    }

    /// Says that something happened: the watchdog gives sleepers another ``stallLimit``.
    func noteActivity() {
        state.withLock { $0.activity &+= 1 }
    }

    /// Starts the watchdog unless it runs; it stops once nobody sleeps on the clock.
    func startWatchdog() {
        let (start, seen) = state.withLock { s in
            defer { s.watchdogRunning = true }
            return (!s.watchdogRunning, s.activity)
        }
        if start { watch(seen: seen, since: .now) }
    }

    /// Looks again a little later: fails the sleepers if nothing happened since `since`
    /// (when the activity count was `seen`) for ``stallLimit``.
    private func watch(seen: UInt64, since: ContinuousClock.Instant) {
        let limit = stallLimit
        let step = min(limit / 4, .milliseconds(500))
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(step / .nanoseconds(1)))) { [weak self] in
            guard let self else { return }
            let looked = ContinuousClock.now
            let (stuck, next, now): ([Sleeper]?, (UInt64, ContinuousClock.Instant)?, Duration) = state.withLock { s in
                if s.sleepers.isEmpty {
                    s.watchdogRunning = false
                    return (nil, nil, s.now)
                }
                if s.activity != seen { return (nil, (s.activity, looked), s.now) }
                guard since.duration(to: looked) >= s.stallLimit else { return (nil, (seen, since), s.now) }
                let stuck = s.sleepers
                s.sleepers.removeAll()
                s.watchdogRunning = false
                return (stuck, nil, s.now)
            }
            for sleeper in stuck ?? [] {
                sleeper.continuation.resume(throwing: Self.stalled(until: sleeper.deadline, now: now, limit: limit))
            }
            if let next { watch(seen: next.0, since: next.1) }
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
