import AccessoryCore
/// A whole trace read into memory by ``TraceReader/readAll(path:)``.
public struct TraceContents: Hashable, Sendable {
    /// The header line, if the trace has one.
    public var header: TraceHeader?
    /// The records, in file order.
    public var records: [TraceRecord]
    /// Problems that were tolerated, such as a truncated last line.
    public var warnings: [TraceWarning]

    /// Contents with the given parts.
    package init(header: TraceHeader? = nil, records: [TraceRecord], warnings: [TraceWarning] = []) {
        self.header = header
        self.records = records
        self.warnings = warnings
    }
}
