import AccessoryCore
/// The optional first line of a trace:
/// `{"format":"accessory-trace","version":1,"source":"…","started":"…"}`.
public struct TraceHeader: Hashable, Sendable {
    /// The value of `format` in every trace.
    package static let format = "accessory-trace"
    /// The format version this code reads and writes.
    public static let currentVersion = 1

    /// The format version of the trace.
    public var version: Int
    /// What wrote the trace, such as `accessoryctl record`.
    public var source: String?
    /// When recording started, as the writer chose to say it (ISO 8601 by convention).
    public var started: String?

    /// A header; by default of the current version, with no source or start time.
    public init(version: Int = TraceHeader.currentVersion, source: String? = nil, started: String? = nil) {
        self.version = version
        self.source = source
        self.started = started
    }
}
