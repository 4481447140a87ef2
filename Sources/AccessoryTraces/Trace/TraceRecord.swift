import AccessoryCore
/// One event of a hotplug trace, with its time and where it came from.
public struct TraceRecord: Hashable, Sendable {
    /// Seconds since the start of the trace.
    public var t: Double
    /// What happened.
    public var event: HotplugEvent
    /// The 1-based line of the source (a trace or an imported log); 0 when there is none.
    public var line: Int

    /// A record of `event` at `t` seconds, from source line `line`.
    public init(t: Double,
 event: HotplugEvent, line: Int = 0) {
        self.t = t
        self.event = event
        self.line = line
    }
}

extension TraceRecord {
    /// The record as one trace line, as ``TraceWriter`` writes it, without the newline.
    public var jsonLine: String {
        var bytes: [UInt8] = []
        TraceEncoding.appendEvent(t: t, event, to: &bytes)
        return String(decoding: bytes.dropLast(), as: UTF8.self)
    }

    /// `t` as a Duration, in whole nanoseconds, for the registry's clock; `nil` when `t` is
    /// not a finite number of seconds from 0. A `t` beyond about 126 years is held there:
    /// `Duration.seconds(Double)` traps on values it cannot represent (a fuzzer found 1e300).
    package var time: Duration? {
        guard t.isFinite, t >= 0 else { return nil }
        return .nanoseconds(Int64((min(t, 4e9) * 1e9).rounded()))
    }
}
