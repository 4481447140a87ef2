import AccessoryCore
/// Something a reader or importer tolerated but reports, such as a truncated last line.
///
/// Prints as `FILE:LINE: reason`.
public struct TraceWarning: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String

    public init(file: String, line: Int, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { "\(file):\(line): \(reason)" }
}
