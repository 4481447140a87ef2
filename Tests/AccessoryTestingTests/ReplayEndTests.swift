import AccessoryCapture
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// A replay ends: a transfer the recording can no longer answer (past its end on that
/// endpoint, or held for a transfer the host cancelled) fails with `.io` once nothing else in
/// the simulation can happen, if someone awaits it; a stream's read-ahead that nobody reads
/// keeps waiting, silently.
@Suite("Replays end", .timeLimit(.minutes(1)))
struct ReplayEndTests {
    typealias Builder = ReplayMatchingTests.CaptureBuilder

    /// Runs `body` with a session on the replayed device, its stall limit `stallLimit`
    /// (`nil`: the default), and returns the replay's report.
    static func withReplay(
        _ builder: Builder, stallLimit: Duration? = .milliseconds(200),
        _ body: @Sendable (SimulatedUSB, AccessorySession) async throws -> Void
    ) async throws -> SimulatedReplayReport {
        let (capture, device) = try builder.capture()
        let usb = SimulatedUSB()
        if let stallLimit { await usb.setStallLimit(stallLimit) }
        let replayed = await usb.plug(try SimulatedAccessory(replaying: capture, device: device))
        let table = ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x0042, speaks: ReplayMatchingTests.reader)])
        try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: ReplayMatchingTests.reader) { session in
                try await body(usb, session)
            }
        }
        return await usb.replayReport(of: replayed)
    }

    /// The error `body` ends with, or the deadline's when it does not end within 10 s.
    static func failure(_ what: String, _ body: @escaping @Sendable () async throws -> Void) async -> (any Error)? {
        do {
            try await withDeadline(what, timeout: .seconds(10)) { try await body() }
            return nil
        } catch {
            return error
        }
    }

    static func expectEnded(
        _ error: (any Error)?, naming parts: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = error as? AccessoryError else {
            Issue.record("expected the replay's .io error, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .io, "\(error)", sourceLocation: sourceLocation)
        for part in parts + ["nothing else in the simulation can happen"] {
            #expect(error.message.contains(part), "\(error.message) should name \(part)", sourceLocation: sourceLocation)
        }
    }

    @Test("Everything recorded on an IN read, a transferIn with no timeout fails with .io within the default stall limit, naming the endpoint and the last transfer")
    func transferInBeyondTheRecordingEnds() async throws {
        let b = try Builder("beyond")
        try b.transfer(0x83, kind: .interrupt, answer: [0x01, 0x02], length: 8)  // transfer 2
        let report = try await Self.withReplay(b, stallLimit: nil) { _, session async throws in
            #expect(try await session.transferIn(0x83, length: 8) == [0x01, 0x02])
            let started = ContinuousClock.now
            let error = await Self.failure("transferIn beyond the recording") { _ = try await session.transferIn(0x83, length: 65535) }
            Self.expectEnded(error, naming: ["interrupt IN 0x83", "goes beyond the recording", "last transfer on interrupt IN 0x83 is transfer 2 of the capture"])
            // Ends: the default stall limit is 8 s; the bound leaves room for a loaded machine
            // (under ThreadSanitizer beside other builds it took 10.4 s) and still tells an
            // end from a call that waits forever.
            #expect(ContinuousClock.now - started <= .seconds(30))
        }
        #expect(report.matched == 1 && report.unconsumed == 0, "\(report)")
        #expect(report.divergences.count == 1 && report.waitingBeyondRecording == 0, "\(report)")
        #expect(report.divergences.first?.contains("interrupt IN 0x83") == true, "\(report)")
    }

    @Test("With a timeout the clock never reaches, the call fails with the same .io, not the stalled clock's .timeout; so does one held for a cancelled transfer")
    func timeoutsAndCancelledTransfersEnd() async throws {
        let b = try Builder("held")
        try b.transfer(0x81, answer: [7], length: 64)  // transfer 2
        try b.transfer(0x83, kind: .interrupt, answer: [1], length: 8)  // 3
        try b.transfer(0x83, kind: .interrupt, length: 8, status: -2)  // 4: the host cancelled it
        let report = try await Self.withReplay(b) { _, session async throws in
            #expect(try await session.transferIn(0x81, length: 64) == [7])
            let timed = await Self.failure("transferIn with a timeout") { _ = try await session.transferIn(0x81, length: 64, timeout: .seconds(3600)) }
            Self.expectEnded(timed, naming: ["bulk IN 0x81", "transfer 2 of the capture"])
            #expect(try await session.transferIn(0x83, length: 8) == [1])
            let held = await Self.failure("transferIn held for a cancelled transfer") { _ = try await session.transferIn(0x83, length: 8) }
            Self.expectEnded(held, naming: ["interrupt IN 0x83", "waits for transfer 4 of the capture (cancelled by the host (-ENOENT))"])
            // The endpoints go on: another call beyond the recording ends the same way.
            let again = await Self.failure("a second transferIn") { _ = try await session.transferIn(0x81, length: 64) }
            Self.expectEnded(again, naming: ["bulk IN 0x81"])
        }
        #expect(report.matched == 2 && report.unconsumed == 0, "\(report)")
        #expect(report.divergences.count == 3, "\(report)")
    }

    @Test("A stream's read-ahead beyond the recording stays silent while nobody reads; a read that waits on it fails with .io")
    func streamReadAheadStaysSilentUntilRead() async throws {
        let b = try Builder("stream")
        try b.transfer(0x81, answer: [1, 2, 3])  // transfer 2
        let report = try await Self.withReplay(b) { usb, session async throws in
            #expect(try await session.read() == [1, 2, 3])
            // Real time on purpose: many stall limits pass with the read-ahead waiting and
            // nobody reading, and nothing may come of it.
            try await Task.sleep(for: .seconds(1))
            let replayed = try #require(await usb.devices.first)
            #expect(await usb.replayReport(of: replayed).divergences == [])
            let error = await Self.failure("a read beyond the recording") { _ = try await session.read() }
            Self.expectEnded(error, naming: ["bulk IN 0x81", "transfer 2 of the capture"])
        }
        #expect(report.matched == 1 && report.divergences.count == 1, "\(report)")
    }

    @Test("A call ended beyond the recording leaves the stream's read-ahead on another endpoint waiting: only the call is a divergence, until someone reads")
    func endingACallLeavesTheReadAheadAlone() async throws {
        let b = try Builder("both")
        try b.transfer(0x81, answer: [1, 2, 3])  // transfer 2
        try b.transfer(0x83, kind: .interrupt, answer: [9], length: 8)  // 3
        let report = try await Self.withReplay(b) { usb, session async throws in
            #expect(try await session.read() == [1, 2, 3])
            #expect(try await session.transferIn(0x83, length: 8) == [9])
            // Both wait beyond the recording now: the stream's read-ahead on 0x81, which
            // nobody reads, and this call on 0x83, which is awaited. Only the call ends.
            let call = await Self.failure("transferIn beyond the recording") { _ = try await session.transferIn(0x83, length: 8) }
            Self.expectEnded(call, naming: ["interrupt IN 0x83", "transfer 3 of the capture"])
            let replayed = try #require(await usb.devices.first)
            let divergences = await usb.replayReport(of: replayed).divergences
            #expect(divergences.count == 1 && divergences.allSatisfy { !$0.contains("0x81") }, "\(divergences)")
            let read = await Self.failure("a read beyond the recording") { _ = try await session.read() }
            Self.expectEnded(read, naming: ["bulk IN 0x81", "transfer 2 of the capture"])
        }
        #expect(report.matched == 2 && report.divergences.count == 2, "\(report)")
    }

    @Test("A session that reads everything and closes ends cleanly: its read-ahead is no divergence, and the report is complete")
    func readAheadAtTheEndIsNoDivergence() async throws {
        let b = try Builder("clean")
        try b.transfer(0x81, answer: [4, 5])
        let report = try await Self.withReplay(b) { _, session async throws in
            #expect(try await session.read() == [4, 5])
            // Real time on purpose: several stall limits pass with the read-ahead waiting.
            try await Task.sleep(for: .seconds(1))
        }
        #expect(report.isComplete && report.matched == 1, "\(report)")
        #expect(report.waitingBeyondRecording >= 1, "\(report)")
    }
}
