import Testing
@testable import AccessoryKit

/// The output state machine alone: events in, actions out.
struct OutputStateMachineTests {
    static func machine(
        packet: Int = 512, transferSize: Int = 64 * 1024, inFlight: Int = 4, capacity: Int = 1 << 20, zlp: Bool = false
    ) -> OutputStateMachine {
        OutputStateMachine(configuration: .init(
            maxPacketSize: packet, transferSize: transferSize, transfersInFlight: inFlight, bufferCapacity: capacity,
            sendsZeroLengthPacket: zlp))
    }

    static func bytes(_ n: Int, _ seed: UInt8 = 0) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &+ Int(seed)) } }

    @Test func transfersAreWholePacketsExceptAWritesLast() {
        // transferSize 1500 is not a whole number of 512-byte packets: transfers take 1024.
        var m = Self.machine(transferSize: 1500, inFlight: 8, zlp: true)
        let a = m.write(1, Self.bytes(2048)[...])
        #expect(a.submits.map(\.count) == [1024, 1024, 0], "a full last packet, then the zero-length packet")
        let b = m.write(2, Self.bytes(1500)[...])
        #expect(b.submits.map(\.count) == [1024, 476], "no zero-length packet after a short one")
        for n in a.submits.map(\.count) + b.submits.map(\.count) {
            #expect(n % 512 == 0 || n == 476, "a short transfer in the middle of a write: \(n)")
        }
    }

    @Test func theZeroLengthPacketFollowsTheWritesLastTransferOnly() {
        var m = Self.machine(transferSize: 1024, inFlight: 8, zlp: true)
        // 3072 bytes: three full transfers, the zero-length packet after the last only.
        #expect(m.write(1, Self.bytes(3072)[...]).submits.map(\.count) == [1024, 1024, 1024, 0])
        // An empty write is a zero-length packet even without the option.
        var plain = Self.machine(zlp: false)
        #expect(plain.write(1, [][...]).submits.map(\.count) == [0])
        // Whole packets while a transfer is in flight wait for it (or for a whole transfer).
        #expect(plain.write(2, Self.bytes(1024)[...]).submits.isEmpty)
        #expect(plain.completed(.completed, length: 0, operation: "bulk OUT 0x01", device: "d").submits.map(\.count) == [1024])
    }

    @Test func smallWritesGatherIntoWholeTransfersWhileOthersAreInFlight() {
        var m = Self.machine(transferSize: 64 * 1024, inFlight: 4)
        // Nothing in flight: a lone small write goes at once.
        #expect(m.write(1, Self.bytes(16 * 1024)[...]).submits.map(\.count) == [16 * 1024])
        // One in flight: whole-packet writes gather until a whole transfer is queued.
        var sent: [Int] = []
        for id in 2...5 { sent += m.write(UInt64(id), Self.bytes(16 * 1024)[...]).submits.map(\.count) }
        #expect(sent == [64 * 1024])
        // A write that ends with a short packet (a message) goes at once.
        sent = m.write(6, Self.bytes(16 * 1024)[...]).submits.map(\.count)
        #expect(sent.isEmpty)
        sent = m.write(7, Self.bytes(100)[...]).submits.map(\.count)
        #expect(sent == [16 * 1024 + 100])
        // A flush sends what is held.
        #expect(m.write(8, Self.bytes(512)[...]).submits.isEmpty)
        #expect(m.flush(9).submits.map(\.count) == [512])
    }

    @Test func writesOnPacketBoundariesShareATransfer() throws {
        var m = Self.machine(transferSize: 64 * 1024, inFlight: 1)
        let first = m.write(1, Self.bytes(16 * 1024, 1)[...])
        #expect(first.submits.map(\.count) == [16 * 1024])
        for id in 2...4 { #expect(m.write(UInt64(id), Self.bytes(16 * 1024, UInt8(id))[...]).submits.isEmpty) }
        // A short write ends the transfer it is in.
        #expect(m.write(5, Self.bytes(100, 5)[...]).submits.isEmpty)
        #expect(m.write(6, Self.bytes(512, 6)[...]).submits.isEmpty)
        let next = m.completed(.completed, length: 16 * 1024, operation: "bulk OUT 0x01", device: "d")
        try #require(next.submits.map(\.count) == [3 * 16 * 1024 + 100])
        #expect(Array(next.submits[0]) == Self.bytes(16 * 1024, 2) + Self.bytes(16 * 1024, 3) + Self.bytes(16 * 1024, 4) + Self.bytes(100, 5))
        let last = m.completed(.completed, length: 3 * 16 * 1024 + 100, operation: "bulk OUT 0x01", device: "d")
        #expect(last.submits.map(\.count) == [512])
    }

    @Test func aWriteReturnsOnceQueuedAndWaitsForRoomBeyondTheCapacity() {
        var m = Self.machine(transferSize: 512, inFlight: 2, capacity: 2048)
        let small = m.write(1, Self.bytes(1024)[...])
        #expect(small.resumptions.map(\.id) == [1], "queued at once")
        #expect(small.submits.map(\.count) == [512, 512])
        let big = m.write(2, Self.bytes(8192)[...])
        #expect(big.resumptions.isEmpty, "8 KiB does not fit in 2 KiB: the write waits")
        #expect(m.queuedBytes == 2048)
        var resumed: [UInt64] = []
        var submitted = 2
        while m.inFlight > 0 {
            let a = m.completed(.completed, length: 512, operation: "bulk OUT 0x01", device: "d")
            resumed += a.resumptions.map(\.id)
            submitted += a.submits.count
            #expect(m.queuedBytes <= 2048)
        }
        #expect(resumed == [2])
        #expect(submitted == (1024 + 8192) / 512)
        #expect(m.flush(3).resumptions.map(\.id) == [3], "everything was sent")
    }

    @Test func aFailedTransferStopsTheOutputAndReportsTheBytesSent() {
        var m = Self.machine(transferSize: 512, inFlight: 4, capacity: 4096)
        #expect(m.write(1, Self.bytes(4096)[...]).submits.count == 4)
        #expect(m.write(2, Self.bytes(100)[...]).resumptions.map(\.id) == [2])
        #expect(m.flush(3).resumptions.isEmpty)
        _ = m.completed(.completed, length: 512, operation: "bulk OUT 0x01", device: "d")
        // The second transfer times out after 100 bytes: everything else is cancelled, and
        // nothing queued behind it is submitted.
        let stop = m.completed(.timedOut, length: 100, operation: "bulk OUT 0x01", device: "d")
        #expect(stop.cancelAll)
        #expect(stop.submits.isEmpty)
        #expect(m.queuedBytes == 0)
        var results: [(UInt64, Result<Void, AccessoryError>)] = []
        while m.inFlight > 0 {
            let a = m.completed(.cancelled, length: 0, operation: "bulk OUT 0x01", device: "d")
            #expect(a.submits.isEmpty, "submitted after a failure")
            results += a.resumptions.map { ($0.id, $0.result) }
        }
        #expect(results.map(\.0) == [3])
        guard case .failure(let error) = results.first?.1 else {
            Issue.record("the flush did not fail")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.bytesTransferred == 612)
        // Reported once: the output takes writes again.
        #expect(m.write(4, Self.bytes(10)[...]).submits.map(\.count) == [10])
    }

    @Test func anUnreportedFailureGoesToTheNextWriteWhoseBytesAreNotQueued() {
        var m = Self.machine(transferSize: 512, inFlight: 1)
        _ = m.write(1, Self.bytes(512)[...])
        let stop = m.completed(.stall, length: 0, operation: "bulk OUT 0x01", device: "d")
        #expect(stop.resumptions.isEmpty)
        let next = m.write(2, Self.bytes(10)[...])
        #expect(next.submits.isEmpty)
        guard case .failure(let error)? = next.resumptions.first?.result else {
            Issue.record("the write did not get the stall")
            return
        }
        #expect(error.code == .stall)
        #expect(error.bytesTransferred == 0)
        #expect(!error.description.contains("bulk OUT 0x01 on") && error.description.hasSuffix("(bulk OUT 0x01)"), "\(error)")
    }

    @Test func aCancelledWaitingWriteStopsTheOutputOnceDrained() {
        var m = Self.machine(transferSize: 512, inFlight: 1, capacity: 512)
        _ = m.write(1, Self.bytes(512)[...])
        #expect(m.write(2, Self.bytes(4096)[...]).resumptions.isEmpty)
        let abort = m.abort(2, AccessoryError(.cancelled, "cancelled"))
        #expect(abort.cancelAll)
        #expect(abort.resumptions.isEmpty, "resumed only once the transfers in flight have come back")
        let done = m.completed(.cancelled, length: 0, operation: "bulk OUT 0x01", device: "d")
        #expect(done.resumptions.map(\.id) == [2])
        if case .failure(let e)? = done.resumptions.first?.result { #expect(e.code == .cancelled) }
        #expect(m.abort(2, AccessoryError(.cancelled, "again")).resumptions.isEmpty)
    }

    @Test func noDeviceWaitsForTheOwnersVerdict() {
        var m = Self.machine(transferSize: 512, inFlight: 1, capacity: 512)
        _ = m.write(1, Self.bytes(512)[...])
        _ = m.write(2, Self.bytes(4096)[...])
        let gone = m.completed(.noDevice, length: 0, operation: "bulk OUT 0x01", device: "d")
        #expect(gone.deviceGone?.operation == "bulk OUT 0x01")
        #expect(gone.resumptions.isEmpty)
        let verdict = m.finish(AccessoryError(.accessoryDisconnected(.unplugged), "unplugged"))
        #expect(verdict.resumptions.map(\.id) == [2])
        guard case .failure(let later)? = m.write(3, [1]).resumptions.first?.result else {
            Issue.record("a write after the verdict went on")
            return
        }
        #expect(later.code == .accessoryDisconnected(.unplugged))
    }
}
