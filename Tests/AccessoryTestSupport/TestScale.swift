import Foundation

/// How many cases the long property tests and storms run. `bash scripts/test` (the quick run)
/// sets `ACCESSORYKIT_TEST_SCALE=quick`, and they run a tenth of their cases; under
/// `scripts/test --full` (CI), or a plain `swift test` (the variable unset), they run all.
/// The same tests, the same assertions: only the number of seeds or cycles changes.
public enum TestScale {
    /// Whether this run is the quick one.
    public static let isQuick = ProcessInfo.processInfo.environment["ACCESSORYKIT_TEST_SCALE"] == "quick"

    /// `full` in a full run; in a quick run a tenth of it, and at least `atLeast`.
    public static func count(_ full: Int, atLeast: Int = 1) -> Int {
        isQuick ? max(atLeast, full / 10) : full
    }
}
