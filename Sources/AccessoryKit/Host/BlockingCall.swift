import Dispatch

/// Runs a device call that blocks in the kernel (an ioctl such as CLEAR_HALT or
/// SET_INTERFACE) on a thread of its own, off Swift's cooperative pool, whose few threads
/// must never block: a slow device then delays only its own caller.
enum BlockingCall {
    /// Concurrent, so that one stuck device does not hold up another's call.
    private static let queue = DispatchQueue(label: "AccessoryKit.blocking-call", attributes: .concurrent)

    /// Runs `body` off the cooperative pool and returns what it returned or threw.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(AccessoryError) -> T) async throws(AccessoryError) -> T {
        let result: Result<T, AccessoryError> = await withCheckedContinuation { c in
            queue.async { c.resume(returning: Result(catching: body)) }
        }
        return try result.get()
    }
}
