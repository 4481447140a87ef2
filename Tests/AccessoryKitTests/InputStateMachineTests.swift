import Testing
@testable import AccessoryKit

/// The input state machine alone: events in, actions out.
struct InputStateMachineTests {
    static func machine(inFlight: Int = 4, capacity: Int = 1 << 20, items: Int = 1024) -> InputStateMachine {
        InputStateMachine(configuration: .init(
            maxPacketSize: 512, transferSize: 64 * 1024, transfersInFlight: inFlight, bufferCapacity: capacity, bufferedItemLimit: items))
    }

    static func complete(_ m: inout InputStateMachine, _ data: [UInt8], _ status: TransferStatus = .completed) -> InputStateMachine.Actions {
        m.completed(status, data: data, operation: "bulk IN 0x81", device: "d")
    }

    @Test func inTransfersAreWholePacketsOfTheInEndpoint() {
        let options = AccessorySession.Options(transferSize: 100)
        let c = DataPlane.Configuration(options: options, inPacketSize: 64, outPacketSize: 512, sessionDescription: "s")
        #expect(c.input.transferLength == 128)
        #expect(c.output.transferSize == 512)
    }

    @Test func zeroLengthPacketsStopPilingUpAtTheItemLimit() {
        var m = Self.machine(inFlight: 4, items: 16)
        var submitted = m.start().submits
        #expect(submitted == 4)
        // Nobody reads; the device answers every IN transfer with a zero-length packet.
        var rounds = 0
        while m.inFlight > 0, rounds < 10_000 {
            submitted += Self.complete(&m, []).submits
            rounds += 1
        }
        #expect(m.bufferedItems == 16)
        #expect(submitted == 16, "no IN transfer is submitted past the item limit")
        // Reading makes room again.
        #expect(m.read(1).resumption.map { (try? $0.result.get()) ?? nil } == [])
        #expect(m.inFlight == 1)
    }

    @Test func backPressureStopsSubmittingAtTheByteCapacity() {
        var m = Self.machine(inFlight: 2, capacity: 1000)
        #expect(m.start().submits == 2)
        #expect(Self.complete(&m, [UInt8](repeating: 1, count: 600)).submits == 1)
        #expect(Self.complete(&m, [UInt8](repeating: 2, count: 600)).submits == 0)
        #expect(m.inFlight == 1)
        let read = m.read(1)
        #expect(read.resumption?.id == 1)
        #expect(read.submits == 1, "600 bytes left: below the capacity again")
        #expect(Self.complete(&m, [UInt8](repeating: 3, count: 600)).submits == 0)
        #expect(m.inFlight == 1)
    }

    @Test func readExactlySplitsChunksAndKeepsTheRest() {
        var m = Self.machine()
        _ = m.start()
        _ = Self.complete(&m, [1, 2, 3])
        _ = Self.complete(&m, [])
        _ = Self.complete(&m, [4, 5, 6])
        let a = m.read(1, exactly: 4)
        #expect(a.resumption.map { (try? $0.result.get()) ?? nil } == [1, 2, 3, 4])
        let b = m.read(2)
        #expect(b.resumption.map { (try? $0.result.get()) ?? nil } == [5, 6])
    }

    @Test func anAbortedReadEndsOnceDrainedAndLosesNothing() {
        var m = Self.machine(inFlight: 2)
        _ = m.start()
        _ = Self.complete(&m, [1])
        let first = m.read(1, exactly: 3)
        #expect(first.resumption == nil)
        let abort = m.abort(1, AccessoryError(.timeout, "late"))
        #expect(abort.cancelAll)
        #expect(abort.resumption == nil)
        // The cancelled transfers still bring data.
        _ = Self.complete(&m, [2], .cancelled)
        let done = Self.complete(&m, [], .cancelled)
        guard case .failure(let error)? = done.resumption?.result else {
            Issue.record("the read did not end")
            return
        }
        #expect(error.code == .timeout)
        #expect(m.inFlight == 0)
        let again = m.read(2, exactly: 2)
        #expect(again.resumption.map { (try? $0.result.get()) ?? nil } == [1, 2])
        #expect(m.inFlight == 2, "the next read started the input again")
    }

    @Test func aStallJoinsTheBufferAfterTheDataBeforeIt() {
        var m = Self.machine(inFlight: 2)
        _ = m.start()
        _ = Self.complete(&m, [7])
        let stall = Self.complete(&m, [], .stall)
        #expect(stall.cancelAll, "the other transfer is cancelled")
        #expect(m.read(1).resumption.map { (try? $0.result.get()) ?? nil } == [7])
        #expect(m.read(2).resumption == nil, "the stall waits for the cancelled transfer")
        let drained = Self.complete(&m, [8], .cancelled)
        #expect(drained.resumption.map { (try? $0.result.get()) ?? nil } == [8], "its data comes before the stall")
        guard case .failure(let error)? = m.read(3).resumption?.result else {
            Issue.record("the stall was not read")
            return
        }
        #expect(error.code == .stall)
    }

    @Test func aFailureDeliversBufferedDataFirst() {
        var m = Self.machine(inFlight: 1)
        _ = m.start()
        _ = Self.complete(&m, [9])
        _ = m.fail(AccessoryError(.accessoryDisconnected(.unplugged), "gone"))
        _ = Self.complete(&m, [], .noDevice)
        #expect(m.read(1).resumption.map { (try? $0.result.get()) ?? nil } == [9])
        guard case .failure(let error)? = m.read(2).resumption?.result else {
            Issue.record("no failure")
            return
        }
        #expect(error.code == .accessoryDisconnected(.unplugged))
    }

    @Test func aSecondReaderIsBusyAndCloseEndsTheFirst() {
        var m = Self.machine()
        _ = m.start()
        #expect(m.read(1).resumption == nil)
        if case .failure(let e)? = m.read(2).resumption?.result { #expect(e.code == .busy) } else { Issue.record("not busy") }
        let close = m.close()
        #expect(close.cancelAll)
        guard case .success(nil)? = close.resumption?.result else {
            Issue.record("the waiting read did not get nil")
            return
        }
    }
}
