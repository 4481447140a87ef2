/// A timer armed with ``USBHost/schedule(at:_:)``. Cancelling it before it falls due means its
/// work does not start; work that has started runs to its end.
package struct HostTimer: Sendable {
    private let cancelAction: @Sendable () -> Void

    /// A timer that `cancel` disarms.
    package init(cancel: @escaping @Sendable () -> Void) {
        cancelAction = cancel
    }

    /// Disarms the timer. Idempotent.
    package func cancel() { cancelAction() }
}
