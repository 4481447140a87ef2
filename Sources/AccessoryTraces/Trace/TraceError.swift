import AccessoryCore
/// A trace or log that cannot be used: the file, the line and the reason.
///
/// Prints as `FILE:LINE: reason`, or `FILE: reason` when it concerns the whole file.
public struct TraceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file's name or path, as given to the reader.
    public var file: String
    /// The 1-based line, or `nil` when the problem is the whole file (it cannot be opened,
    /// or is not the expected kind of file).
    public var line: Int?
    /// What is wrong, in words.
    public var reason: String

    /// An error at `file`, `line` (`nil`: the whole file), for `reason`.
    public init(file: String, line: Int?, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String {
        if let line { return "\(file):\(line): \(reason)" }
        return "\(file): \(reason)"
    }
}
