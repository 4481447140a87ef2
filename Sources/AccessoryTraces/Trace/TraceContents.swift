import AccessoryCore
/// A whole trace read into memory by ``TraceReader/readAll(path:)``.
public struct TraceContents: Hashable, Sendable {
    public var header: TraceHeader?
    public var records: [TraceRecord]
    /// Problems that were tolerated, such as a truncated last line.
    public var warnings: [TraceWarning]

    public init(header: TraceHeader? = nil, records: [TraceRecord], warnings: [TraceWarning] = []) {
        self.header = header
        self.records = records
        self.warnings = warnings
    }
}
