import AccessoryCore
/// Something a reader or importer tolerated but reports, such as a truncated last line.
///
/// Prints as `FILE:LINE: reason`.
public struct TraceWarning: Hashable, Sendable, CustomStringConvertible {
    /// The file's name or path, as given to the reader.
    public var file: String
    /// The 1-based line.
    public var line: Int
    /// What was tolerated, in words.
    public var reason: String

    /// A warning at `file`, `line`, for `reason`.
    package init(file: String, line: Int, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { "\(file):\(line): \(reason)" }
}
