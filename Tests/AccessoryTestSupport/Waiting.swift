import Foundation
import Synchronization

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

/// A wait that ran out of time: what was awaited, and for how long.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public let description: String
}

/// Runs `operation`, and throws ``DeadlineExceeded`` naming `what` if it has not finished
/// within `timeout` of real time, so that a wait that hangs fails on its own instead of at the
/// suite's time limit. The operation is then cancelled; one that ignores cancellation is left
/// running.
public func withDeadline<T: Sendable>(
    _ what: String, timeout: Duration = .seconds(10), _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.pending.withLock { $0 = continuation }
        race.timer.withLock { t in
            t = Task {
                // The deadline itself: real time is what it measures.
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                if race.finish(.failure(DeadlineExceeded(description: "\(what): not done within \(timeout)"))) {
                    race.work.withLock { $0?.cancel() }
                }
            }
        }
        race.work.withLock { w in
            w = Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                if race.finish(result) { race.timer.withLock { $0?.cancel() } }
            }
        }
    }
}

/// The operation and the deadline of ``withDeadline(_:timeout:_:)``: the first to finish resumes
/// the caller and cancels the other.
private final class DeadlineRace<T: Sendable>: Sendable {
    let pending = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let work = Mutex<Task<Void, Never>?>(nil)
    let timer = Mutex<Task<Void, Never>?>(nil)

    /// Resumes the caller with `result`, unless it was resumed already.
    func finish(_ result: Result<T, any Error>) -> Bool {
        guard let continuation = pending.withLock({ c in defer { c = nil }; return c }) else { return false }
        continuation.resume(with: result)
        return true
    }
}
