import Foundation
import Testing

/// Keeps the suites that drive the same simulated accessories from two test modules (the
/// library's session tests and the CLI's `open` tests) from running at once when one
/// `swift test` process runs both, as `swift test --filter 'Session|Open'` does. Each holds
/// an exclusive `flock` on one file in the simulator's private TMPDIR for its whole run.
/// (scripts/test runs the two modules under separate simulators, where it never waits.)
public struct SimulatorLock: SuiteTrait, TestScoping {
    static var path: String {
        (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/accessory-sim-hardware.lock"
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let fd = open(Self.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        defer { if fd >= 0 { close(fd) } }
        // Polls the lock (a blocking flock would hold a thread of the cooperative pool),
        // with no deadline: the other suite holds it for its whole run.
        while fd >= 0, flock(fd, LOCK_EX | LOCK_NB) != 0 {
            // The poll's interval (see above).
            try await Task.sleep(for: .milliseconds(50))
        }
        try await function()
    }
}

extension Trait where Self == SimulatorLock {
    /// Runs the suite while no other suite that uses ``SimulatorLock`` runs.
    public static var simulatorLock: Self { Self() }
}
