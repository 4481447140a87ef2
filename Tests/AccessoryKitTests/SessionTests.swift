import AccessoryCore
import AccessoryTraces
import Foundation
import Logging
import AccessoryTestSupport
import Testing
@testable import AccessoryKit

/// Sessions against accessory-sim's loopback accessories: bulk OUT 0x01 comes back on bulk
/// IN 0x81, one IN transfer per OUT transfer, 512-byte packets.
extension HardwareTests {
    @Suite("Sessions", .simulatorLock)
    struct Sessions {
        typealias Sim = SimulatorControl
        static let loopback = "org.example.loopback"

        /// A manager, its event log, and the accessory with `serial` (plugged by the simulator
        /// at start-up, or by the test) with its simulator device. The device is reset first:
        /// no echo data or halt left by an earlier test.
        static func setUp(
            serial: String = "SN1", interval: Duration = .milliseconds(300), logger: Logger = testLogger
        ) async throws -> (AccessoryManager, EventLog, Accessory, Sim.Device) {
            let manager = try await AccessoryManager(configuration: .init(reconcileInterval: interval, logger: logger))
            let log = await EventLog.recording(manager)
            do {
                let device = try #require(try Sim.list().first { $0.serial == serial }?.device, "no accessory \(serial) in the simulator")
                try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(device)(a) } else { false } } })
                let accessory = try #require(await log.connected.last(where: HardwareTests.isAt(device)))
                try await manager.openDevice(accessory.connectionID).reset()
                return (manager, log, accessory, device)
            } catch {
                await manager.shutdown()
                throw error
            }
        }

        /// Runs `body` with ``setUp(serial:interval:logger:)``'s manager, and shuts the
        /// manager down however `body` ends, closing any session it left open.
        static func run(
            serial: String = "SN1", interval: Duration = .milliseconds(300), logger: Logger = testLogger,
            _ body: (AccessoryManager, EventLog, Accessory, Sim.Device) async throws -> Void
        ) async throws {
            let (manager, log, accessory, device) = try await setUp(serial: serial, interval: interval, logger: logger)
            do {
                try await body(manager, log, accessory, device)
            } catch {
                await manager.shutdown()
                throw error
            }
            await manager.shutdown()
        }

        static func capture<T>(_ body: () async throws(AccessoryError) -> T) async -> Result<T, AccessoryError> {
            do {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }

        static func code<T>(_ result: Result<T, AccessoryError>) -> AccessoryError.Code? {
            if case .failure(let error) = result { error.code } else { nil }
        }

        static func isDisconnected<T>(_ result: Result<T, AccessoryError>) -> Bool {
            code(result)?.disconnectReason != nil
        }

        // MARK: Data

        @Test func echoes64MiBByteForByteWhileReadingConcurrently() async throws {
            try await Self.run { manager, _, accessory, _ in
                let data = SessionFixtures.randomBytes(64 << 20, seed: 64)
                try await manager.withSession(to: accessory, protocol: Self.loopback, name: "echo-64") { session in
                    async let received: (Int, Int?) = {
                        var offset = 0
                        var firstMismatch: Int?
                        while offset < data.count, let chunk = try await session.read() {
                            if firstMismatch == nil, !SessionFixtures.matches(chunk, data, at: offset) { firstMismatch = offset }
                            offset += chunk.count
                        }
                        return (offset, firstMismatch)
                    }()
                    var sent = 0
                    while sent < data.count {
                        let n = min(1 << 20, data.count - sent)
                        try await session.write(Array(data[sent..<sent + n]))
                        sent += n
                    }
                    let (count, mismatch) = try await received
                    #expect(count == data.count)
                    #expect(mismatch == nil, "first differing chunk at byte \(mismatch ?? 0)")
                }
            }
        }

        @Test func oneByteAndZeroLengthWrites() async throws {
            try await Self.run { manager, _, accessory, _ in
                try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                    #expect(try await session.echo([0x42]) == [0x42])
                    // A zero-length write is a zero-length packet; the loopback echoes it as an
                    // empty chunk.
                    try await session.write([])
                    #expect(try await session.read() == [])
                    #expect(try await session.echo([1, 2, 3]) == [1, 2, 3])
                }
            }
        }

        @Test("Packet-size multiples end with a zero-length packet only when asked", arguments: [512, 1024, 64 * 1024])
        func packetMultiples(size: Int) async throws {
            try await Self.run { manager, _, accessory, _ in
                let data = SessionFixtures.randomBytes(size, seed: UInt64(size))
                for zlp in [false, true] {
                    try await manager.withSession(to: accessory, protocol: Self.loopback, options: .init(sendsZeroLengthPacket: zlp)) { session in
                        #expect(session.maxPacketSize == 512)
                        try await session.write(data)
                        try await session.write([0x7f])  // a marker after it
                        #expect(try await session.read(exactly: size) == data)
                        if zlp { #expect(try await session.read() == [], "the zero-length packet") }
                        #expect(try await session.read() == [0x7f])
                        // Not a multiple: never a zero-length packet.
                        try await session.write(Array(data.prefix(size - 1)))
                        try await session.write([0x7e])
                        #expect(try await session.read(exactly: size - 1) == Array(data.prefix(size - 1)))
                        #expect(try await session.read() == [0x7e])
                    }
                }
            }
        }

        @Test func manySmallWritesWithInterleavedReads() async throws {
            try await Self.run { manager, _, accessory, _ in
                var rng = SplitMix64(seed: 7)
                let sizes = (0..<400).map { _ in 1 + rng.next(below: 1500) }
                try await manager.withSession(to: accessory, protocol: Self.loopback, options: .init(readTimeout: .seconds(5))) { session in
                    for (i, size) in sizes.enumerated() {
                        let bytes = SessionFixtures.randomBytes(size, seed: UInt64(i))
                        #expect(try await session.echo(bytes) == bytes, "round \(i)")
                    }
                    // Several writes before reading anything back.
                    let burst = (0..<50).map { SessionFixtures.randomBytes(1 + $0 * 37, seed: UInt64(1000 + $0)) }
                    for bytes in burst { try await session.write(bytes) }
                    #expect(try await session.read(exactly: burst.reduce(0) { $0 + $1.count }) == Array(burst.joined()))
                }
            }
        }

        @Test func twoAccessoriesEchoAtOnce() async throws {
            try await Self.run(serial: "SN1") { manager, log, first, _ in
                let secondDevice = try #require(try Sim.list().first { $0.serial == "SN2" }?.device)
                try #require(await log.wait { $0.contains { HardwareTests.isAt(secondDevice)($0.accessory) } })
                let second = try #require(await log.connected.last(where: HardwareTests.isAt(secondDevice)))
                try await manager.openDevice(second.connectionID).reset()
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for (accessory, seed) in [(first, UInt64(1)), (second, 2)] {
                        group.addTask {
                            let data = SessionFixtures.randomBytes(8 << 20, seed: seed)
                            return try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                                async let back = session.read(exactly: data.count)
                                try await session.write(data)
                                return try await back == data
                            }
                        }
                    }
                    for try await same in group { #expect(same) }
                }
            }
        }

        // MARK: Faults

        @Test func readTimeoutLosesNothing() async throws {
            try await Self.run { manager, _, accessory, _ in
                try await manager.withSession(to: accessory, protocol: Self.loopback, options: .init(readTimeout: .milliseconds(200))) { session in
                    let start = ContinuousClock.now
                    let result = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                    let elapsed = ContinuousClock.now - start
                    #expect(Self.code(result) == .timeout)
                    #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(3), "timed out after \(elapsed)")
                    let back = try await session.echo(Array("after a timeout".utf8))
                    #expect(back == Array("after a timeout".utf8))
                }
            }
        }

        @Test func writeTimeoutWhenTheDeviceAcceptsNothing() async throws {
            try await Self.run { manager, _, accessory, device in
                try await manager.withSession(to: accessory, protocol: Self.loopback, options: .init(writeTimeout: .milliseconds(300))) { session in
                    // The next bulk transfer never completes: the IN transfers are in flight
                    // already, so it is the write's.
                    try Sim.ctl("fault", device.id, "timeout")
                    let start = ContinuousClock.now
                    // The write is queued at once; the flush waits for the accessory.
                    try await session.write(Array("lost".utf8))
                    let result = await Self.capture { () async throws(AccessoryError) in try await session.flush() }
                    #expect(Self.code(result) == .timeout)
                    if case .failure(let error) = result { #expect(error.bytesTransferred == 0) }
                    #expect(ContinuousClock.now - start >= .milliseconds(290))
                    try Sim.ctl("fault", device.id, "none")
                    #expect(try await session.echo(Array("still here".utf8)) == Array("still here".utf8))
                }
            }
        }

        @Test func cancellingAPendingReadLeavesTheSessionUsable() async throws {
            try await Self.run { manager, _, accessory, device in
                try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                    let reader = Task { await Self.capture { () async throws(AccessoryError) in try await session.read() } }
                    try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the read is pending")
                    let submittedBefore = session.statistics.inSubmitted
                    reader.cancel()
                    #expect(Self.code(await reader.value) == .cancelled)
                    // Every IN transfer was cancelled and has completed: none is pending.
                    #expect(try SimulatorControl.ioctlLog(device)["pending-in"] == "0")
                    #expect(try await session.echo(Array("usable".utf8)) == Array("usable".utf8))
                    #expect(session.statistics.inSubmitted > submittedBefore)
                }
            }
        }

        @Test func cancellingAPendingWriteLeavesTheSessionUsable() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let device = try plugged.plug("1209:00a7:CANCELW")
            try await Self.run(serial: "CANCELW") { manager, _, accessory, _ in
                try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                    // Nobody reads: past 32 MiB unread the loopback stops accepting, and the
                    // write waits until it is cancelled.
                    let writer = Task {
                        await Self.capture { () async throws(AccessoryError) in
                            try await session.write(SessionFixtures.randomBytes(40 << 20, seed: 3))
                        }
                    }
                    try #require(await waitUntil { try Sim.isBackPressured(device) }, "the loopback is full and the write waits")
                    writer.cancel()
                    #expect(Self.code(await writer.value) == .cancelled)
                    // Its transfers were cancelled and have completed.
                    #expect(try SimulatorControl.ioctlLog(device)["pending-out"] == "0")
                    // The session goes on: what the device accepted comes back, in order.
                    let data = SessionFixtures.randomBytes(40 << 20, seed: 3)
                    let back = try await session.read(exactly: 1 << 20)
                    #expect(back == Array(data.prefix(1 << 20)))
                }
            }
        }

        @Test func stallOnWriteThenClearStall() async throws {
            try await Self.run { manager, _, accessory, device in
                try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                    try Sim.ctl("fault", device.id, "stall")
                    let first = await Self.capture { () async throws(AccessoryError) in
                        try await session.write(Array("stalls".utf8))
                        try await session.flush()
                    }
                    #expect(Self.code(first) == .stall)
                    #expect(try SimulatorControl.ioctlLog(device)["halted"] == "0x01")
                    let again = await Self.capture { () async throws(AccessoryError) in
                        try await session.write([1])
                        try await session.flush()
                    }
                    #expect(Self.code(again) == .stall, "the endpoint stays halted until cleared")
                    try await session.clearHalt()
                    #expect(try SimulatorControl.ioctlLog(device)["halted"] == "-")
                    #expect(try await session.echo(Array("cleared".utf8)) == Array("cleared".utf8))
                }
            }
        }

        @Test func stallOnReadThenClearStall() async throws {
            try await Self.run { manager, _, accessory, device in
                try await manager.withSession(to: accessory, protocol: Self.loopback, options: .init(readTimeout: .milliseconds(100))) { session in
                    // Stop the input, so the next bulk transfer submitted is a read's.
                    #expect(Self.code(await Self.capture { () async throws(AccessoryError) in try await session.read() }) == .timeout)
                    try Sim.ctl("fault", device.id, "stall")
                    let stalled = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                    #expect(Self.code(stalled) == .stall)
                    #expect(try SimulatorControl.ioctlLog(device)["halted"] == "0x81")
                    try await session.clearHalt()
                    #expect(try SimulatorControl.ioctlLog(device)["halted"] == "-")
                    #expect(try await session.echo(Array("reads again".utf8)) == Array("reads again".utf8))
                }
            }
        }

        @Test func unplugDuringReadEndsBothStreamsAtOnce() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            _ = try plugged.plug("1209:00a1:UNPLUGR")
            try await Self.run(serial: "UNPLUGR") { manager, _, accessory, _ in
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "reader")
                #expect(try await session.echo([9]) == [9])
                let reader = Task { () -> (Result<[UInt8]?, AccessoryError>, ContinuousClock.Instant) in
                    let result = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                    return (result, ContinuousClock.now)
                }
                try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the read is pending")
                try plugged.unplug("UNPLUGR")
                let unplugged = ContinuousClock.now
                let (result, ended) = await reader.value
                #expect(Self.isDisconnected(result), "\(result)")
                #expect(ended - unplugged < .milliseconds(100), "the read ended \(ended - unplugged) after the unplug")
                let write = await Self.capture { () async throws(AccessoryError) in try await session.write([1]) }
                #expect(Self.isDisconnected(write))
                #expect(ContinuousClock.now - unplugged < .milliseconds(100))
                await session.close()
            }
        }

        @Test func unplugDuringABackPressuredWriteEndsBothStreams() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let device = try plugged.plug("1209:00a2:UNPLUGW")
            try await Self.run(serial: "UNPLUGW") { manager, _, accessory, _ in
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "writer")
                // Nobody reads: past 32 MiB unread the loopback stops accepting, and the write waits.
                let writer = Task { () -> (Result<Void, AccessoryError>, ContinuousClock.Instant) in
                    let result = await Self.capture { () async throws(AccessoryError) in
                        try await session.write(SessionFixtures.randomBytes(48 << 20, seed: 5))
                    }
                    return (result, ContinuousClock.now)
                }
                try #require(await waitUntil { try Sim.isBackPressured(device) }, "the loopback is full and the write waits")
                try plugged.unplug("UNPLUGW")
                let unplugged = ContinuousClock.now
                let (result, ended) = await writer.value
                #expect(Self.isDisconnected(result), "\(result)")
                #expect(ended - unplugged < .milliseconds(100), "the write ended \(ended - unplugged) after the unplug")
                // The input delivers what it had buffered, then ends the same way.
                var readResult: Result<[UInt8]?, AccessoryError> = .success([])
                var chunks = 0
                while case .success(.some) = readResult, chunks < 100 {
                    chunks += 1
                    readResult = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                }
                #expect(Self.isDisconnected(readResult), "\(readResult)")
                await session.close()
            }
        }

        @Test func deviceVanishingMidTransferEndsBothStreams() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let device = try plugged.plug("1209:00a3:VANISH")
            try await Self.run(serial: "VANISH", interval: .seconds(30)) { manager, log, accessory, _ in
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "vanishing")
                let limit = 3 << 20
                let data = SessionFixtures.randomBytes(8 << 20, seed: 9)
                try Sim.ctl("fault", device.id, "unplug-after=\(limit)")
                // The first bytes round-trip before the rest is written, so the input has IN
                // transfers in flight however late the reader's task starts on a loaded machine.
                let head = 4096
                try await session.write(Array(data[..<head]))
                try await session.flush()
                #expect(try await session.read(exactly: head) == Array(data[..<head]))
                let reader = Task { () -> (Int, Bool, Result<[UInt8]?, AccessoryError>, ContinuousClock.Instant) in
                    var offset = head
                    var same = true
                    while true {
                        let result = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                        guard case .success(let chunk?) = result else { return (offset, same, result, ContinuousClock.now) }
                        same = same && SessionFixtures.matches(chunk, data, at: offset)
                        offset += chunk.count
                    }
                }
                let written = await Self.capture { () async throws(AccessoryError) in try await session.write(Array(data[head...])) }
                let writeEnded = ContinuousClock.now
                #expect(Self.isDisconnected(written), "\(written)")
                let (count, same, readEnd, readEnded) = await reader.value
                #expect(Self.isDisconnected(readEnd), "\(readEnd)")
                // What the device had echoed before it vanished came back, in order; what was
                // still inside it when it vanished is gone with it.
                #expect(count > 0 && count <= limit, "\(count) bytes came back")
                #expect(same)
                #expect(abs((readEnded - writeEnded) / .milliseconds(1)) < 100, "the streams ended \(readEnded - writeEnded) apart")
                // The session told the manager, which evicted the connection.
                #expect(await log.wait { $0.contains { if case .disconnected(let a, _) = $0 { a.connectionID == accessory.connectionID } else { false } } })
                await session.close()
            }
        }

        @Test func silentUnplugEndsTheSessionWithTheManagersReason() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            _ = try plugged.plug("1209:00a5:GHOSTS")
            try await Self.run(serial: "GHOSTS") { manager, log, accessory, _ in
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "haunted")
                let reader = Task { await Self.capture { () async throws(AccessoryError) in try await session.read() } }
                try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the read is pending")
                // No uevent: the transfers in flight find the device gone, the session reports
                // it, and the manager's eviction names the same evidence.
                try plugged.unplug("GHOSTS", silent: true)
                let result = await reader.value
                guard case .failure(let error) = result, let reason = error.code.disconnectReason else {
                    Issue.record("expected accessoryDisconnected, got \(result)")
                    return
                }
                #expect(reason.code == "ghost-evicted")
                #expect(error.message.hasPrefix("accessory 1209:00a5 GHOSTS disconnected: ghost-evicted: "), "\(error.message)")
                try #require(await log.wait { $0.contains { if case .disconnected(let a, _) = $0 { a.connectionID == accessory.connectionID } else { false } } })
                let evicted = await log.disconnected.first { $0.0.connectionID == accessory.connectionID }?.1
                #expect(evicted == reason)
                await session.close()
            }
        }

        @Test func evictionByTheReconcilerEndsAnIdleSession() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            _ = try plugged.plug("1209:00a6:IDLE")
            try await Self.run(serial: "IDLE") { manager, log, accessory, _ in
                let session = try await manager.openSession(
                    to: accessory, protocol: Self.loopback, name: "idle", options: .init(readTimeout: .milliseconds(50)))
                // A timed-out read stops the input: no transfer is in flight to notice anything.
                #expect(Self.code(await Self.capture { () async throws(AccessoryError) in try await session.read() }) == .timeout)
                try plugged.unplug("IDLE", silent: true)
                try #require(await log.wait { $0.contains { if case .disconnected(let a, _) = $0 { a.connectionID == accessory.connectionID } else { false } } })
                let reason = try #require(await log.disconnected.first { $0.0.connectionID == accessory.connectionID }?.1)
                #expect(reason == .ghostEvicted(.absentFromSnapshot))
                let read = await Self.capture { () async throws(AccessoryError) in try await session.read() }
                let write = await Self.capture { () async throws(AccessoryError) in try await session.write([1]) }
                #expect(Self.code(read) == .accessoryDisconnected(reason))
                #expect(Self.code(write) == .accessoryDisconnected(reason))
                await session.close()
            }
        }

        // MARK: Ownership

        @Test func aSecondOpenIsBusyAndNamesTheHolder() async throws {
            try await Self.run { manager, _, accessory, _ in
                let first = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "first")
                let second = await Self.capture { () async throws(AccessoryError) in try await manager.openSession(to: accessory, protocol: Self.loopback) }
                guard case .failure(let error) = second else {
                    Issue.record("a second session opened")
                    return
                }
                #expect(error.code == .busy)
                #expect(error.message.contains("held by session 'first'"), "\(error.message)")
                // Another libusb context holds another file descriptor: another process, as
                // the device sees it.
                let other = try await AccessoryManager(configuration: .init(logger: testLogger))
                do {
                    let otherAccessory = try #require(await other.connectedAccessories.first { $0.descriptor.serial == "SN1" })
                    let third = await Self.capture { () async throws(AccessoryError) in try await other.openSession(to: otherAccessory, protocol: Self.loopback) }
                    #expect(Self.code(third) == .busy)
                    if case .failure(let e) = third { #expect(e.message.contains("another process"), "\(e.message)") }
                    await first.close()
                    try await other.withSession(to: otherAccessory, protocol: Self.loopback, name: "fourth") { fourth in
                        let back = try await fourth.echo([4])
                        #expect(back == [4])
                    }
                } catch {
                    await other.shutdown()
                    throw error
                }
                await other.shutdown()
            }
        }

        @Test func unknownProtocolListsWhatTheAccessorySpeaks() async throws {
            try await Self.run { manager, _, accessory, _ in
                let result = await Self.capture { () async throws(AccessoryError) in try await manager.openSession(to: accessory, protocol: "org.example.nope") }
                #expect(Self.code(result) == .protocolNotSupported)
                if case .failure(let e) = result { #expect(e.message.contains("org.example.loopback"), "\(e.message)") }
            }
        }

        @Test func closedSessionsRefuseWork() async throws {
            try await Self.run { manager, _, accessory, device in
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback)
                let releasedBefore = Int(try SimulatorControl.ioctlLog(device)["released"] ?? "") ?? -1
                let reader = Task { await Self.capture { () async throws(AccessoryError) in try await session.read() } }
                try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the read is pending")
                await session.close()
                #expect(try await reader.value.get() == nil, "a waiting read finishes")
                await session.close()  // idempotent
                #expect(session.isClosed)
                #expect(try await session.read() == nil)
                #expect(Self.code(await Self.capture { () async throws(AccessoryError) in try await session.write([1]) }) == .sessionClosed)
                let log = try SimulatorControl.ioctlLog(device)
                #expect(log["claimed"] == "-")
                #expect(Int(log["released"] ?? "") == releasedBefore + 1)
                #expect(await manager.openSessions.isEmpty)
            }
        }

        @Test func withSessionClosesWhenTheBodyThrows() async throws {
            struct Boom: Error {}
            try await Self.run { manager, _, accessory, device in
                await #expect(throws: Boom.self) {
                    try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                        try await session.write([1, 2])
                        throw Boom()
                    }
                }
                #expect(try SimulatorControl.ioctlLog(device)["claimed"] == "-")
                // The accessory can be opened again. The first session never read, so it took
                // nothing from the IN endpoint: the echo of [1, 2] is still the accessory's,
                // and the next session reads it first.
                try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                    let back = try await session.echo([3, 4])
                    #expect(back == [1, 2])
                    #expect(try await session.read(exactly: 2) == [3, 4])
                }
            }
        }

        @Test func detachedKernelDriverIsAttachedAgainOnClose() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let device = try plugged.plug("1209:00a4:KDRIVER")
            try Sim.ctl("kernel-driver", device.id, "0", "usbtest")
            try await Self.run(serial: "KDRIVER") { manager, _, accessory, _ in
                let refused = await Self.capture { () async throws(AccessoryError) in try await manager.openSession(to: accessory, protocol: Self.loopback) }
                #expect(Self.code(refused) == .busy)
                if case .failure(let e) = refused { #expect(e.message.contains("kernel driver"), "\(e.message)") }
                #expect(try SimulatorControl.ioctlLog(device)["driver"] == "usbtest")

                let session = try await manager.openSession(
                    to: accessory, protocol: Self.loopback, name: "detacher", options: .init(detachKernelDriver: true))
                var log = try SimulatorControl.ioctlLog(device)
                #expect(log["driver"] == "-")
                #expect(log["claimed"] == "0")
                #expect(try await session.echo([7, 7]) == [7, 7])
                await session.close()
                log = try SimulatorControl.ioctlLog(device)
                #expect(log["driver"] == "usbtest")
                #expect(log["claimed"] == "-")
            }
        }

        @Test func aSessionOpenAtShutdownIsClosedAndNamed() async throws {
            let captured = CapturedLog()
            try await Self.run(logger: captured.logger) { manager, _, accessory, device in
                let releasedBefore = Int(try SimulatorControl.ioctlLog(device)["released"] ?? "") ?? -1
                let session = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "forgotten")
                let reader = Task { await Self.capture { () async throws(AccessoryError) in try await session.read() } }
                try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the read is pending")
                await manager.shutdown()
                #expect(Self.code(await reader.value) == .accessoryDisconnected(.shutdown))
                #expect(session.isClosed)
                #expect(captured.messages(at: .warning).contains("closing session 'forgotten' still open at shutdown"))
                let log = try SimulatorControl.ioctlLog(device)
                #expect(log["claimed"] == "-")
                #expect(Int(log["released"] ?? "") == releasedBefore + 1)
                #expect(Self.code(await Self.capture { () async throws(AccessoryError) in try await session.write([1]) }) == .sessionClosed)
            }
        }
    }
}
