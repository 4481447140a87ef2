import AccessoryLocking
/// Timers on a clock that moves only when its owner says: what a simulated host's
/// ``USBHost/schedule(at:_:)`` arms. The owner moves its clock to ``nextDeadline`` and runs
/// what ``takeDue(by:)`` hands back, in deadline order (ties in the order they were armed).
package final class VirtualTimers: Sendable {
    private struct Timer {
        var id: UInt64
        var deadline: Duration
        var work: @Sendable () async -> Void
    }

    private struct State {
        var timers: [Timer] = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// No timers.
    package init() {}

    /// Arms a timer that runs `work` once the owner's clock reaches `deadline`.
    package func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        let id = state.withLock { s in
            s.nextID += 1
            s.timers.append(Timer(id: s.nextID, deadline: deadline, work: work))
            return s.nextID
        }
        return HostTimer { [weak self] in self?.state.withLock { $0.timers.removeAll { $0.id == id } } }
    }

    /// The earliest deadline of an armed timer.
    package var nextDeadline: Duration? { state.withLock { $0.timers.map(\.deadline).min() } }

    /// Disarms the timers due by `now` and hands back their work, in deadline order.
    package func takeDue(by now: Duration) -> [@Sendable () async -> Void] {
        state.withLock { s in
            let due = s.timers.filter { $0.deadline <= now }.sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) }
            s.timers.removeAll { $0.deadline <= now }
            return due.map(\.work)
        }
    }

    /// Disarms every timer.
    package func removeAll() {
        state.withLock { $0.timers.removeAll() }
    }
}
