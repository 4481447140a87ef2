import AccessoryCore
/// Why a line is not valid JSON, and where.
package struct JSONLineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The 1-based byte column where the problem was found.
    package var column: Int
    /// What is wrong, such as `expected ':' after key, found 'x'`.
    package var reason: String

    package init(column: Int, reason: String) {
        self.column = column
        self.reason = reason
    }

    package var description: String { "\(reason) at column \(column)" }
}
