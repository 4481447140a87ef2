import AccessoryCapture
import AccessoryCore
import AccessoryKit
import AccessoryLocking

/// One recorded device's side of a conversation, played back: per endpoint (control counting
/// as one), the recorded transfers in order, each answering the host's next transfer there.
///
/// - The standard requests the stack makes itself are answered from ``RecordedDescriptors``
///   and neither matched nor expected.
/// - A recorded transfer the host cancelled (`-ENOENT`, `-ECONNRESET`) or that never
///   completed is optional: passed over when a needed one follows it on its endpoint; when
///   it is the last, a transfer that reaches it waits, as it did, until the host gives up.
/// - An OUT transfer or a control request must carry the recorded setup and bytes, else it
///   fails with a divergence naming the transfer's index in the capture, its endpoint, and
///   the expected and actual bytes from the first difference. Where the capture cut the
///   recorded data, the bytes it kept and the length are matched.
/// - An IN transfer whose recorded data the capture cut fails with a divergence naming its
///   index and both sizes: the bytes it carried cannot be known.
/// - An IN transfer beyond the recording waits, as a device with nothing to send NAKs
///   (a stream's read-ahead does this at the end of every replay); an OUT transfer or a
///   control request beyond it is a divergence.
/// - A bulk or interrupt transfer left waiting so (beyond the recording, or held for a
///   transfer the host cancelled) is a ``Stranding``: once nothing else in the simulation
///   can happen and someone awaits it, it fails (``ended(_:)``) and is a divergence.
final class ReplayScript: Sendable {
    /// A transfer the recording cannot answer: why, naming its endpoint and the recording's
    /// last transfer there.
    struct Stranding: Sendable, Hashable {
        let message: String
        /// Counted in ``SimulatedReplayReport/waitingBeyondRecording`` while it waits.
        let beyondRecording: Bool
    }

    private let label: String
    private let transfers: [USBCapture.Transfer]
    private let descriptors: RecordedDescriptors
    private let pacing: ReplayPacing
    /// Each endpoint's recorded transfers (indices into `transfers`); control under ``controlKey``.
    private let queues: [UInt16: [Int]]
    private let state = Locked(State())

    private struct State: Sendable {
        /// How far each endpoint's queue has been played.
        var next: [UInt16: Int] = [:]
        var matched = 0
        var divergences: [String] = []
        var waiting = 0
    }

    private static let controlKey: UInt16 = 0x100

    init(label: String, transfers: [USBCapture.Transfer], descriptors: RecordedDescriptors, pacing: ReplayPacing) {
        self.label = label
        self.transfers = transfers
        self.descriptors = descriptors
        self.pacing = pacing
        var queues: [UInt16: [Int]] = [:]
        for (i, t) in transfers.enumerated() {
            switch t.kind {
            case .control:
                if let setup = t.setup, RecordedDescriptors.isAnswered(setup) { continue }
                queues[Self.controlKey, default: []].append(i)
            case .bulk, .interrupt:
                queues[UInt16(t.endpoint), default: []].append(i)
            case .isochronous:
                continue  // not simulated: never expected
            }
        }
        self.queues = queues
    }

    /// Whether the app may leave the recorded transfer out: the host cancelled it, or it never completed.
    private static func isOptional(_ t: USBCapture.Transfer) -> Bool {
        switch t.status {
        case nil, -2, -104: true  // ENOENT, ECONNRESET
        default: false
        }
    }

    /// What the device answers to `transfer`.
    func answer(_ transfer: SimulatedTransfer) -> SimulatedTransfer.Answer { respond(transfer).answer }

    /// What the device answers to `transfer`, and, for a bulk or interrupt transfer that it
    /// leaves waiting because the recording has no answer, why.
    func respond(_ transfer: SimulatedTransfer) -> (answer: SimulatedTransfer.Answer, stranding: Stranding?) {
        if let setup = transfer.setup, let answer = descriptors.answer(setup, isIn: transfer.isIn) { return (answer, nil) }
        let key = transfer.kind == .control ? Self.controlKey : UInt16(transfer.endpoint)
        let queue = queues[key] ?? []
        let endpoint = endpointName(transfer)
        let last = queue.last.map { "the recording's last transfer on \(endpoint) is transfer \($0) of the capture (\(Self.outcome(transfers[$0])))" }
            ?? "the recording has no transfer on \(endpoint)"
        let stuck = "and nothing else in the simulation can happen"
        return state.withLock { s in
            let position = s.next[key] ?? 0
            guard position < queue.count else {
                if transfer.isIn && transfer.kind != .control {
                    s.waiting += 1
                    return (.never, Stranding(message: "\(label): \(transfer) goes beyond the recording, \(stuck): \(last)", beyondRecording: true))
                }
                return (diverge(&s, "\(label): \(transfer) goes beyond the recording: nothing is left on \(endpoint)"), nil)
            }
            let at = queue[position...].firstIndex { !Self.isOptional(transfers[$0]) } ?? position
            s.next[key] = at + 1
            let index = queue[at]
            let recorded = transfers[index]
            if let mismatch = mismatch(transfer, recorded) {
                return (diverge(&s, "\(label): transfer \(index) of the capture (\(endpoint)) diverges: \(mismatch)"), nil)
            }
            if recorded.isIn && recorded.isCut {
                return (diverge(
                    &s,
                    "\(label): transfer \(index) of the capture (\(endpoint)) was cut by the capture: it kept \(recorded.data.count) of the \(recorded.length) bytes the device sent, so it cannot be replayed exactly"), nil)
            }
            if !Self.isOptional(recorded) { s.matched += 1 }
            let answer = paced(Self.answer(recorded), recorded)
            guard answer == .never, transfer.kind != .control else { return (answer, nil) }
            let message = "\(label): \(transfer) waits for transfer \(index) of the capture (\(Self.outcome(recorded))), "
                + "\(stuck): the recording has no answer for it; \(last)"
            return (answer, Stranding(message: message, beyondRecording: false))
        }
    }

    /// A stranded transfer fails now: it is a divergence, and no longer waiting.
    /// - Returns: the error it fails with (`.io`).
    func ended(_ stranding: Stranding) -> AccessoryError {
        state.withLock { s in
            s.divergences.append(stranding.message)
            if stranding.beyondRecording { s.waiting -= 1 }
        }
        return AccessoryError(.io, stranding.message, operation: "replay")
    }

    /// How a recorded transfer ended: `64 bytes, completed`, `cancelled by the host (-ENOENT)`.
    private static func outcome(_ t: USBCapture.Transfer) -> String {
        let size = t.isIn ? "\(t.data.count) bytes" : "\(t.data.count) bytes sent"
        switch t.status {
        case nil: return "never completed in the capture"
        case 0: return "\(size), completed"
        case -2: return "cancelled by the host (-ENOENT)"
        case -104: return "cancelled by the host (-ECONNRESET)"
        case -110: return "timed out by the host (-ETIMEDOUT)"
        case -32: return "a stall (-EPIPE)"
        case let status?: return "\(size), status \(status)"
        }
    }

    /// How the recording answered: its bytes and status, as the host would see them.
    private static func answer(_ recorded: USBCapture.Transfer) -> SimulatedTransfer.Answer {
        switch recorded.status {
        case 0, -121:  // EREMOTEIO: a short packet where one was not wanted; the data came
            return recorded.isIn ? .data(recorded.data) : .accept
        case -32: return .stall  // EPIPE
        case -19, -108: return .failure(.noDevice)  // ENODEV, ESHUTDOWN
        case -75: return .failure(.overflow)  // EOVERFLOW
        case nil, -2, -104, -110: return .never  // cancelled, never completed, or timed out by the host
        default: return .failure(.protocolError)  // EPROTO, EILSEQ, ETIME, …
        }
    }

    private func paced(_ answer: SimulatedTransfer.Answer, _ recorded: USBCapture.Transfer) -> SimulatedTransfer.Answer {
        guard pacing == .recorded, answer != .never, let completed = recorded.completed, completed > recorded.submitted else { return answer }
        return .after(completed - recorded.submitted, answer)
    }

    /// Why `transfer` is not `recorded`, or `nil` when it is.
    private func mismatch(_ transfer: SimulatedTransfer, _ recorded: USBCapture.Transfer) -> String? {
        if let setup = transfer.setup {
            guard let want = recorded.setup else { return "the recording has a \(recorded.kind.name) transfer there" }
            let got = setup.setupPacket(isIn: transfer.isIn, length: transfer.length)
            let expected = [
                want.requestType, want.request, UInt8(want.value & 0xff), UInt8(want.value >> 8), UInt8(want.index & 0xff),
                UInt8(want.index >> 8), UInt8(want.length & 0xff), UInt8(want.length >> 8),
            ]
            if got != expected { return "setup " + Self.difference(expected: expected, actual: got) }
            if !transfer.isIn, let difference = Self.outDifference(recorded, transfer.data) { return "data " + difference }
            return nil
        }
        let kind: USBCapture.Transfer.Kind = transfer.kind == .interrupt ? .interrupt : .bulk
        if recorded.kind != kind { return "the recording has a \(recorded.kind.name) transfer there, not \(kind.name)" }
        if !transfer.isIn, let difference = Self.outDifference(recorded, transfer.data) { return difference }
        return nil
    }

    /// How `sent` differs from the recorded OUT data, or `nil` when it matches. Where the
    /// capture cut the data, it matches on the bytes kept and the length carried.
    private static func outDifference(_ recorded: USBCapture.Transfer, _ sent: [UInt8]) -> String? {
        guard recorded.isCut else { return sent == recorded.data ? nil : difference(expected: recorded.data, actual: sent) }
        let kept = recorded.data.count
        if sent.count == recorded.length && sent.prefix(kept).elementsEqual(recorded.data) { return nil }
        if sent.count != recorded.length && sent.prefix(kept).elementsEqual(recorded.data.prefix(sent.count)) {
            return "expected \(recorded.length) bytes (the capture kept the first \(kept)), got \(sent.count)"
        }
        return difference(expected: recorded.data, actual: Array(sent.prefix(kept))) + " (the capture kept \(kept) of \(recorded.length) bytes)"
    }

    private func diverge(_ s: inout State, _ message: String) -> SimulatedTransfer.Answer {
        s.divergences.append(message)
        return .error(AccessoryError(.io, message, operation: "replay"))
    }

    private func endpointName(_ transfer: SimulatedTransfer) -> String {
        transfer.kind == .control ? "control" : "\(transfer.kind) \(transfer.isIn ? "IN" : "OUT") \(hexByte(transfer.endpoint))"
    }

    /// `at byte 3 of 8: expected 02 00 …, got 03 00 …` (at most 16 bytes of each, from the first difference).
    static func difference(expected: [UInt8], actual: [UInt8]) -> String {
        let first = zip(expected, actual).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(expected.count, actual.count)
        func show(_ bytes: [UInt8]) -> String {
            let tail = bytes.dropFirst(first)
            if tail.isEmpty { return "(end)" }
            return tail.prefix(16).map { String(hexByte($0).dropFirst(2)) }.joined(separator: " ") + (tail.count > 16 ? " …" : "")
        }
        return "at byte \(first) (expected \(expected.count) bytes, got \(actual.count)): expected \(show(expected)), got \(show(actual))"
    }

    /// The report so far: transfers answered as recorded, divergences, and the needed
    /// recorded transfers nobody asked for.
    var report: SimulatedReplayReport {
        state.withLock { s in
            var unconsumed = 0
            for (key, queue) in queues {
                for index in queue.dropFirst(s.next[key] ?? 0) where !Self.isOptional(transfers[index]) { unconsumed += 1 }
            }
            return SimulatedReplayReport(matched: s.matched, divergences: s.divergences, unconsumed: unconsumed, waitingBeyondRecording: s.waiting)
        }
    }
}
