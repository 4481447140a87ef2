/// Why a line is not valid JSON, and where.
public struct JSONLineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The 1-based byte column where the problem was found.
    public var column: Int
    /// What is wrong, such as `expected ':' after key, found 'x'`.
    public var reason: String

    public init(column: Int, reason: String) {
        self.column = column
        self.reason = reason
    }

    public var description: String { "\(reason) at column \(column)" }
}
