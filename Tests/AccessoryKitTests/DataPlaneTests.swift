import AccessoryCore
import AccessoryTraces
import Synchronization
import Testing
@testable import AccessoryKit
import AccessoryLocking

/// The data plane's storage over in-memory queues: no simulator, no libusb.
struct DataPlaneTests {
    /// The operations reported as having found the device gone.
    final class GoneLog: Sendable {
        let operations = Locked<[String]>([])
    }

    static func plane(
        _ device: MemoryLoopback, options: AccessorySession.Options = .init(), gone: GoneLog? = nil
    ) -> DataPlane {
        let configuration = DataPlane.Configuration(
            options: options, inPacketSize: device.input.maxPacketSize, outPacketSize: device.output.maxPacketSize,
            sessionDescription: "session 'test'")
        return DataPlane(input: device.input, output: device.output, configuration: configuration) { sign, _ in
            gone?.operations.withLock { $0.append(sign.operation) }
        }
    }

    static func bytes(_ n: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return rng.bytes(n)
    }

    /// Closes `plane`, reporting the transfers it cancels as `device` does.
    static func close(_ plane: DataPlane, _ device: MemoryLoopback) async {
        await driving(device, accepting: false) { await plane.close() }
    }

    /// Runs `body` in a task, and `device` until the task has finished (or, when it does not
    /// accept data, only reports cancelled transfers).
    static func driving<T: Sendable>(
        _ device: MemoryLoopback, accepting: Bool = true, _ body: @escaping @Sendable () async -> T
    ) async -> T {
        let task = Task { await body() }
        let done = Locked(false)
        let watcher = Task {
            _ = await task.value
            done.withLock { $0 = true }
        }
        while !done.withLock({ $0 }) {
            if accepting { device.run() } else { device.runCancellations() }
            await Task.yield()
        }
        _ = await watcher.value
        return await task.value
    }

    @Test func pipelinedWritesEchoInOrder() async throws {
        let device = MemoryLoopback(transfers: 4)
        let plane = Self.plane(device, options: .init(transferSize: 4096, writeBufferCapacity: 16384))
        plane.startInput()
        let data = Self.bytes(100_000, seed: 1)
        let writes = stride(from: 0, to: data.count, by: 3000).map { Array(data[$0..<min($0 + 3000, data.count)]) }
        let flushed = await Self.driving(device) {
            for w in writes {
                if case .failure(let e) = await plane.write(w[...], timeout: nil) { return Result<Void, AccessoryError>.failure(e) }
            }
            return await plane.flush(timeout: nil)
        }
        #expect((try? flushed.get()) != nil)
        let same = device.stream == data
        #expect(same)
        let back = await plane.read(exactly: data.count, timeout: nil)
        let echoed = (try? back.get()) == data
        #expect(echoed)
        await Self.close(plane, device)
        plane.releaseTransfers()
        #expect(device.input.isClosed && device.output.isClosed)
    }

    @Test func inTransfersAskForWholeInPackets() async {
        let device = MemoryLoopback(inPacketSize: 64, outPacketSize: 512, transfers: 2)
        let plane = Self.plane(device, options: .init(readsInFlight: 2, writesInFlight: 2, transferSize: 100))
        plane.startInput()
        #expect(device.input.pendingSubmissions.map(\.length) == [128, 128])
        await Self.close(plane, device)
    }

    @Test func zeroLengthPacketsAreBoundedWhenNobodyReads() async {
        let device = MemoryLoopback(transfers: 4)
        let plane = Self.plane(device, options: .init(readBufferItemLimit: 32))
        plane.startInput()
        for _ in 0..<10_000 {
            guard device.input.pending > 0 else { break }
            device.input.complete(data: [])
        }
        #expect(plane.statistics.bufferedItems == 32)
        #expect(plane.statistics.inSubmitted == 32)
        await Self.close(plane, device)
    }

    @Test func aWriteTimeoutReportsTheBytesSentAndLeavesNoHole() async throws {
        let device = MemoryLoopback(transfers: 4)
        let plane = Self.plane(device, options: .init(transferSize: 512))
        let data = Self.bytes(4096, seed: 2)
        #expect((try? await plane.write(data[...], timeout: nil).get()) != nil, "queued at once")
        #expect(device.output.pending == 4)
        // The device takes the first transfer, then nothing: the flush times out.
        device.acceptOne()
        let flushed = await Self.driving(device, accepting: false) { await plane.flush(timeout: .milliseconds(20)) }
        guard case .failure(let error) = flushed else {
            Issue.record("the flush did not time out")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.bytesTransferred == 512)
        // The device comes back: the transfers still pending were cancelled, and what was
        // queued behind them was dropped, so nothing after byte 512 of the write is sent.
        device.run()
        let prefix = device.stream == Array(data.prefix(512))
        #expect(prefix)
        let more = Self.bytes(700, seed: 3)
        #expect((try? await plane.write(more[...], timeout: nil).get()) != nil)
        device.run()
        let joined = device.stream == Array(data.prefix(512)) + more
        #expect(joined)
        #expect((try? await plane.flush(timeout: nil).get()) != nil)
        await Self.close(plane, device)
    }

    @Test func aTransferTimingOutCancelsEverythingBehindIt() async {
        let device = MemoryLoopback(transfers: 4)
        let plane = Self.plane(device, options: .init(transferSize: 512, writeBufferCapacity: 512))
        let data = Self.bytes(8192, seed: 4)
        let writer = Task { await plane.write(data[...], timeout: nil) }
        while device.output.pending < 4 { await Task.yield() }
        // The endpoint times the first transfer out after 100 bytes (as libusb's per-transfer
        // timeout would); the later ones must not go out.
        device.output.complete(.timedOut, length: 100)
        device.run()
        guard case .failure(let error) = await writer.value else {
            Issue.record("the waiting write did not fail")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.bytesTransferred == 100)
        #expect(device.stream.isEmpty, "a cancelled transfer sent something after the gap")
        await Self.close(plane, device)
    }

    @Test func backPressureHoldsAWriteUntilTheDeviceTakesTheBytes() async {
        let device = MemoryLoopback(transfers: 2)
        let plane = Self.plane(device, options: .init(readsInFlight: 2, writesInFlight: 2, transferSize: 512, writeBufferCapacity: 1024))
        let data = Self.bytes(10_000, seed: 5)
        let finished = Locked(false)
        let writer = Task {
            let r = await plane.write(data[...], timeout: nil)
            finished.withLock { $0 = true }
            return r
        }
        while device.output.pending < 2 { await Task.yield() }
        #expect(!finished.withLock { $0 }, "10,000 bytes do not fit in 1,024 plus two transfers")
        while !finished.withLock({ $0 }) {
            device.acceptOne()
            await Task.yield()
        }
        #expect((try? await writer.value.get()) != nil)
        device.run()
        let same = device.stream == data
        #expect(same)
        await Self.close(plane, device)
    }

    @Test func cancellingAWaitingReadStopsTheInputAndLosesNothing() async {
        let device = MemoryLoopback(transfers: 2)
        let plane = Self.plane(device, options: .init(readsInFlight: 2, writesInFlight: 2))
        plane.startInput()
        let reader = Task { await plane.read(timeout: nil) }
        while device.input.pending < 2 { await Task.yield() }
        reader.cancel()
        // The cancellation reaches the queue; the first transfer still brings data.
        while !device.input.pendingSubmissions.allSatisfy(\.cancelled) { await Task.yield() }
        device.input.complete(.completed, data: [1, 2])
        device.input.completeCancelled()
        guard case .failure(let error) = await reader.value else {
            Issue.record("the read was not cancelled")
            return
        }
        #expect(error.code == .cancelled)
        #expect((try? await plane.read(timeout: nil).get()) == [1, 2])
        await Self.close(plane, device)
    }

    @Test func aVanishedDeviceIsReportedAndTheVerdictEndsBothDirections() async {
        let device = MemoryLoopback(transfers: 1)
        let gone = GoneLog()
        let plane = Self.plane(device, options: .init(readsInFlight: 1, writesInFlight: 1, transferSize: 512, writeBufferCapacity: 512), gone: gone)
        plane.startInput()
        device.input.complete(data: [5])
        let writer = Task { await plane.write(Self.bytes(4096, seed: 6)[...], timeout: nil) }
        while device.output.pending < 1 { await Task.yield() }
        device.output.complete(.noDevice, length: 0)
        device.input.completeCancelled()
        #expect(gone.operations.withLock { $0 } == ["bulk OUT 0x01"])
        plane.fail(AccessoryError(.accessoryDisconnected(.unplugged), "unplugged"))
        if case .failure(let e) = await writer.value { #expect(e.code == .accessoryDisconnected(.unplugged)) } else { Issue.record("the write went on") }
        device.input.completeCancelled()
        #expect((try? await plane.read(timeout: nil).get()) == [5], "buffered data first")
        if case .failure(let e) = await plane.read(timeout: nil) { #expect(e.code == .accessoryDisconnected(.unplugged)) } else { Issue.record("the read went on") }
        if case .failure(let e) = await plane.flush(timeout: nil) { #expect(e.code == .accessoryDisconnected(.unplugged)) } else { Issue.record("the flush went on") }
        await Self.close(plane, device)
    }

    @Test func closeEndsAWaitingReadAndWrite() async {
        let device = MemoryLoopback(transfers: 1)
        let plane = Self.plane(device, options: .init(readsInFlight: 1, writesInFlight: 1, transferSize: 512, writeBufferCapacity: 512))
        plane.startInput()
        let reader = Task { await plane.read(timeout: nil) }
        let writer = Task { await plane.write(Self.bytes(4096, seed: 7)[...], timeout: nil) }
        while device.output.pending < 1 { await Task.yield() }
        let closer = Task { await plane.close() }
        while !(device.input.pendingSubmissions.allSatisfy(\.cancelled) && device.output.pendingSubmissions.allSatisfy(\.cancelled)) {
            await Task.yield()
        }
        device.run()
        await closer.value
        #expect((try? await reader.value.get()) == .some(nil))
        if case .failure(let e) = await writer.value { #expect(e.code == .sessionClosed) } else { Issue.record("the write went on") }
    }
}
