/// How a replay went so far (``SimulatedUSB/replayReport(of:)``).
public struct SimulatedReplayReport: Sendable, Hashable, CustomStringConvertible {
    /// Recorded transfers answered as recorded, the optional ones (cancelled by the host or
    /// never completed) aside.
    public var matched: Int
    /// One message per transfer that did not match the recording: the transfer's index in
    /// `capture.transfers(of: device)`, its endpoint, and the expected and actual bytes from
    /// the first difference; or, for an awaited transfer the recording could no longer
    /// answer once nothing else could happen, its endpoint and the recording's last
    /// transfer there.
    public var divergences: [String]
    /// Recorded transfers nobody asked for, other than the optional ones (cancelled by the
    /// host, never completed, and the standard requests answered from the descriptors).
    public var unconsumed: Int
    /// IN transfers that asked for more than the recording holds on their endpoint and were
    /// left waiting, as a device with nothing to send leaves them, until their timeout or
    /// cancellation. Not a divergence: a byte stream's read-ahead makes a few at the end of
    /// every replay. One that someone still awaited once nothing else could happen failed
    /// instead, and is counted in ``divergences``, not here.
    public var waitingBeyondRecording: Int

    /// A report with these counts.
    public init(matched: Int, divergences: [String], unconsumed: Int, waitingBeyondRecording: Int = 0) {
        self.matched = matched
        self.divergences = divergences
        self.unconsumed = unconsumed
        self.waitingBeyondRecording = waitingBeyondRecording
    }

    /// Whether the app asked for every needed recorded transfer and nothing else diverged.
    public var isComplete: Bool { divergences.isEmpty && unconsumed == 0 }

    /// `412 matched, 0 divergences, 0 unconsumed, 2 waiting beyond the recording`, then each
    /// divergence on its own line.
    public var description: String {
        let counts = "\(matched) matched, \(divergences.count) divergences, \(unconsumed) unconsumed, \(waitingBeyondRecording) waiting beyond the recording"
        return ([counts] + divergences).joined(separator: "\n")
    }
}
