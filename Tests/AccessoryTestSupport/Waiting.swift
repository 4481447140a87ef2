import Foundation

/// How often the waits below look again. A poll, not a wait for time: each look checks the
/// condition, and the wait ends as soon as it holds.
private let pollInterval = Duration.milliseconds(10)

/// Waits until `condition` holds, or `timeout` passes.
/// - Returns: whether it held (checked once more at the deadline).
@discardableResult
public func waitUntil(
    timeout: Duration = .seconds(10), isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        // The poll interval between two looks at the condition (see `pollInterval`).
        try? await Task.sleep(for: pollInterval)
    }
    return try await condition()
}

/// ``waitUntil(timeout:_:)`` for synchronous code (a test that drives child processes
/// from its own thread): blocks the calling thread between looks.
@discardableResult
public func pollUntil(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        // The poll interval between two looks at the condition (see `pollInterval`).
        usleep(UInt32(pollInterval.components.attoseconds / 1_000_000_000_000))
    }
    return try condition()
}
