import AccessoryCore
/// Writes a hotplug trace (<doc:TraceFormat>, version 1) to a ``TraceSink``.
///
/// Fields are written in the contract's order (`t`, `event`, `bus`, `address`, `port`,
/// `vendor`, `product`, `serial`, `manufacturer`, `name`, `bcdDevice`, `protocols`); unknown
/// fields are left out, never written as `null`. `t` is rounded to microseconds and written
/// compactly (`0`, `2.5`, `0.001234`). By default each record goes to the sink as soon as it
/// is written, so a killed recorder loses at most the line being written.
public struct TraceWriter<Sink: TraceSink> {
    /// Where the bytes go.
    package private(set) var sink: Sink
    /// Whether each record is handed to the sink at once (and the sink flushed); otherwise
    /// records are batched until 256 KiB are pending or ``flush()`` is called.
    package var flushesEachRecord: Bool
    private var pending: [UInt8] = []
    private static var batchSize: Int { 256 * 1024 }

    /// A writer to `sink`. With `flushesEachRecord`, each record goes to the sink (and the
    /// sink is flushed) at once; otherwise records are batched until 256 KiB are pending or
    /// ``flush()`` is called.

    public init(sink: Sink,
 flushesEachRecord: Bool = true) {
        self.sink = sink
        self.flushesEachRecord = flushesEachRecord
        pending.reserveCapacity(flushesEachRecord ? 1024 : Self.batchSize + 4096)
    }

    /// Writes the header line.
    public mutating func writeHeader(_ header: TraceHeader = TraceHeader()) throws {
        TraceEncoding.appendHeader(header, to: &pending)
        try recordWritten()
    }

    /// Writes one record (its `line` is not written).
    public mutating func write(_ record: TraceRecord) throws {
        try write(t: record.t, event: record.event)
    }

    /// Writes one event at time `t` (seconds since the start of the trace).
    public mutating func write(t: Double, event: HotplugEvent) throws {
        TraceEncoding.appendEvent(t: t, event, to: &pending)
        try recordWritten()
    }

    /// Hands every pending byte to the sink and flushes it.
    public mutating func flush() throws {
        if !pending.isEmpty {
            try pending.withUnsafeBytes { try sink.write($0) }
            pending.removeAll(keepingCapacity: true)
        }
        try sink.flush()
    }

    private mutating func recordWritten() throws {
        if flushesEachRecord || pending.count >= Self.batchSize { try flush() }
    }
}

extension TraceWriter: Sendable where Sink: Sendable {}
