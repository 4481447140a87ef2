import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// A session's one-transfer calls (`endpoints`, `transferIn`, `transferOut`, `clearHalt`,
    /// `selectAlternateSetting`) through real libusb against accessory-sim: its loopback
    /// accessory (bulk OUT 0x01 echoed on bulk IN 0x81, 512-byte packets) and its `,interrupt`
    /// one (the same on interrupt endpoints, 64-byte packets). Each test plugs an accessory
    /// of its own, so nothing an earlier test left in a FIFO can reach it.
    @Suite("Endpoints")
    struct Endpoints {
        typealias Sim = SimulatorControl
        static let loopback = "org.example.loopback"

        static func outcome<T>(_ body: () async throws(AccessoryError) -> T) async -> Result<T, AccessoryError> {
            do { return .success(try await body()) } catch { return .failure(error) }
        }

        static func failure<T>(_ result: Result<T, AccessoryError>) -> AccessoryError? {
            if case .failure(let error) = result { error } else { nil }
        }

        /// The simulator's count of a device's URBs (`urbs`, `bulk_urbs`, `interrupt_urbs`, …).
        static func count(_ device: Sim.Device, _ key: String) throws -> Int {
            let log = try Sim.ioctlLog(device)
            return try #require(Int(log[key] ?? ""), "no \(key) in the ioctl log: \(log)")
        }

        /// Plugs `spec`, opens a session on it, runs `body`, then closes the session, shuts the
        /// manager down and unplugs whatever `body` left plugged, however `body` ends.
        static func run(
            _ spec: String,
            _ body: (AccessoryManager, Accessory, AccessorySession, Sim.Device, Plugged) async throws -> Void
        ) async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            do {
                let device = try plugged.plug(spec)
                try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
                let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
                let session = try await manager.openSession(to: accessory, protocol: loopback, name: "endpoints")
                do {
                    try await body(manager, accessory, session, device, plugged)
                } catch {
                    await session.close()
                    throw error
                }
                await session.close()
            } catch {
                await manager.shutdown()
                throw error
            }
            await manager.shutdown()
        }

        /// `transferOut(0x01, bytes)` then `transferIn(0x81, length:)`: what came back.
        static func echo(_ session: AccessorySession, _ bytes: [UInt8], length: Int = 65_535) async throws(AccessoryError) -> [UInt8] {
            try await session.transferOut(0x01, bytes, timeout: .seconds(5))
            return try await session.transferIn(0x81, length: length, timeout: .seconds(5))
        }

        // MARK: Endpoints and echoes

        @Test func bulkEndpointsMatchTheDescriptorsAndEcho() async throws {
            try await Self.run("1209:00e0:EPBULK") { manager, accessory, session, device, _ in
                // The descriptors libusb read from the device (the simulator's loopback).
                let info = try #require(await manager.deviceInfo(for: accessory.connectionID))
                let interface = try #require(info.configuration?.interfaces.first { $0.isVendorSpecific })
                let described = interface.endpoints.compactMap(AccessoryEndpoint.init)
                #expect(session.endpoints == described)
                #expect(session.endpoints == [
                    AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 512),
                    AccessoryEndpoint(address: 0x81, kind: .bulk, maxPacketSize: 512),
                ])
                #expect(session.alternateSetting == 0)

                let bulkBefore = try Self.count(device, "bulk_urbs")
                let interruptBefore = try Self.count(device, "interrupt_urbs")
                #expect(try await Self.echo(session, Array("hello".utf8)) == Array("hello".utf8))
                // A zero-length packet comes back as one: [] and not the next transfer's bytes.
                #expect(try await Self.echo(session, []) == [])
                #expect(try await Self.echo(session, [7]) == [7])
                // More than one packet, and large transfers.
                let threePackets = SessionFixtures.randomBytes(1500, seed: 15)
                #expect(try await Self.echo(session, threePackets, length: 2048) == threePackets)
                let largest = SessionFixtures.randomBytes(65_535, seed: 16)
                #expect(try await Self.echo(session, largest) == largest)
                // A frame larger than 64 KiB (a uru4000 reader's 111,424 bytes), one transfer each way.
                let frame = SessionFixtures.randomBytes(111_424, seed: 17)
                #expect(try await Self.echo(session, frame, length: 111_424) == frame)
                // They ran as bulk URBs (libusb may split a large IN transfer into several).
                #expect(try Self.count(device, "bulk_urbs") - bulkBefore >= 10)
                #expect(try Self.count(device, "interrupt_urbs") == interruptBefore)
                #expect(try Sim.ioctlLog(device)["fifo"] == "0", "every echoed byte was read")
            }
        }

        @Test func interruptEndpointsMatchTheDescriptorsAndEcho() async throws {
            try await Self.run("1209:00e1:EPINTR:org.example.loopback,interrupt") { manager, accessory, session, device, _ in
                let info = try #require(await manager.deviceInfo(for: accessory.connectionID))
                let interface = try #require(info.configuration?.interfaces.first { $0.isVendorSpecific })
                #expect(session.endpoints == interface.endpoints.compactMap(AccessoryEndpoint.init))
                #expect(session.endpoints == [
                    AccessoryEndpoint(address: 0x01, kind: .interrupt, maxPacketSize: 64),
                    AccessoryEndpoint(address: 0x81, kind: .interrupt, maxPacketSize: 64),
                ])

                let bulkBefore = try Self.count(device, "bulk_urbs")
                let interruptBefore = try Self.count(device, "interrupt_urbs")
                #expect(try await Self.echo(session, [0xa7, 0xfe], length: 64) == [0xa7, 0xfe])
                #expect(try await Self.echo(session, [], length: 64) == [])
                #expect(try await Self.echo(session, [8], length: 64) == [8])
                let severalPackets = SessionFixtures.randomBytes(200, seed: 20)
                #expect(try await Self.echo(session, severalPackets, length: 256) == severalPackets)
                // Eight transfers, each one interrupt URB; none ran as bulk.
                #expect(try Self.count(device, "interrupt_urbs") - interruptBefore == 8)
                #expect(try Self.count(device, "bulk_urbs") == bulkBefore)
            }
        }

        /// The loopback answers one OUT transfer of 10 bytes with 10 bytes on IN. A `length`
        /// of 4 gets the first 4 of them and the next call the other 6, in order, as
        /// accessory-sim (and libusb over it) does it: truncation, not `.overflow`. (A real
        /// device sending a 10-byte packet into a 4-byte buffer babbles, and the host
        /// controller reports an overflow; the simulator's usbfs does not model babble.)
        @Test func aShortLengthGetsAtMostThatMany() async throws {
            try await Self.run("1209:00e2:EPSHORT") { _, _, session, device, _ in
                let ten: [UInt8] = Array(0..<10)
                try await session.transferOut(0x01, ten, timeout: .seconds(5))
                let first = await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 4, timeout: .seconds(5))
                }
                #expect(try first.get() == [0, 1, 2, 3], "at most 4 bytes, the first 4 the device sent")
                #expect(try await session.transferIn(0x81, length: 512, timeout: .seconds(5)) == [4, 5, 6, 7, 8, 9])
                // A length of one byte, then nothing is left behind.
                #expect(try await Self.echo(session, [1, 2], length: 1) == [1])
                #expect(try await session.transferIn(0x81, length: 1, timeout: .seconds(5)) == [2])
                #expect(try Sim.ioctlLog(device)["fifo"] == "0")
            }
        }

        // MARK: Refusals before anything is sent

        @Test func anEndpointNotOnTheInterfaceOrOfTheWrongDirectionIsNotFound() async throws {
            try await Self.run("1209:00e3:EPNOTFOUND") { _, _, session, device, _ in
                let urbsBefore = try Self.count(device, "urbs")
                let calls: [(String, String, () async throws(AccessoryError) -> Void)] = [
                    ("transferIn 0x82", "0x82", { () async throws(AccessoryError) in _ = try await session.transferIn(0x82, length: 8) }),
                    ("transferIn 0x01", "0x01", { () async throws(AccessoryError) in _ = try await session.transferIn(0x01, length: 8) }),
                    ("transferOut 0x81", "0x81", { () async throws(AccessoryError) in try await session.transferOut(0x81, [1]) }),
                    ("transferOut 0x02", "0x02", { () async throws(AccessoryError) in try await session.transferOut(0x02, [1]) }),
                    ("clearHalt 0x83", "0x83", { () async throws(AccessoryError) in try await session.clearHalt(0x83) }),
                ]
                for (name, endpoint, call) in calls {
                    let error = Self.failure(await Self.outcome(call))
                    #expect(error?.code == .notFound, "\(name): \(String(describing: error))")
                    #expect(error?.message.contains(endpoint) == true, "\(name) names the endpoint: \(String(describing: error))")
                }
                #expect(session.callsInFlight == 0)
                #expect(try Self.count(device, "urbs") == urbsBefore, "nothing was submitted")
                // The session still works.
                #expect(try await Self.echo(session, [3]) == [3])
            }
        }

        @Test func aLengthOutsideTheRangeIsAUsageErrorNamingIt() async throws {
            try await Self.run("1209:00e4:EPLENGTH") { _, _, session, device, _ in
                let urbsBefore = try Self.count(device, "urbs")
                for length in [-1, (16 << 20) + 1, Int.max, Int.min] {
                    let error = Self.failure(await Self.outcome { () async throws(AccessoryError) in
                        try await session.transferIn(0x81, length: length)
                    })
                    #expect(error?.code == .invalidArgument, "\(length): \(String(describing: error))")
                    #expect(error?.message.contains("length \(length) is out of range: 0...16777216") == true, "\(String(describing: error))")
                }
                #expect(try Self.count(device, "urbs") == urbsBefore, "nothing was submitted")
                #expect(try await Self.echo(session, [4]) == [4])
            }
        }

        // MARK: Timeouts, halts, alternate settings

        @Test func aTimeoutOnAnEmptyINLeavesTheSessionWorking() async throws {
            try await Self.run("1209:00e5:EPTIMEOUT") { _, _, session, device, _ in
                let start = ContinuousClock.now
                let result = await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 512, timeout: .milliseconds(200))
                }
                let elapsed = ContinuousClock.now - start
                #expect(Self.failure(result)?.code == .timeout, "\(result)")
                #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(5), "timed out after \(elapsed)")
                // libusb discarded the URB: none is left to take the next echo.
                #expect(await waitUntil { (try? Sim.ioctlLog(device)["pending-in"]) == "0" })
                #expect(session.callsInFlight == 0)
                let after = try await Self.echo(session, Array("after".utf8))
                #expect(after == Array("after".utf8))
            }
        }

        @Test func clearHaltClearsAStalledEndpoint() async throws {
            try await Self.run("1209:00e6:EPHALT") { _, _, session, device, _ in
                try Sim.ctl("fault", device.id, "stall")
                let stalled = await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 512, timeout: .seconds(5))
                }
                #expect(Self.failure(stalled)?.code == .stall, "\(stalled)")
                #expect(try Sim.ioctlLog(device)["halted"] == "0x81")
                let again = await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 512, timeout: .seconds(5))
                }
                #expect(Self.failure(again)?.code == .stall, "halted until cleared: \(again)")
                try await session.clearHalt(0x81)
                #expect(try Sim.ioctlLog(device)["halted"] == "-")
                // Clearing an endpoint that is not halted succeeds too.
                try await session.clearHalt(0x01)
                #expect(try await Self.echo(session, Array("cleared".utf8)) == Array("cleared".utf8))
            }
        }

        @Test func alternateSettingZeroIsSelectedAndAMissingOneIsRefused() async throws {
            try await Self.run("1209:00e7:EPALT") { _, _, session, _, _ in
                let endpoints = session.endpoints
                try await session.selectAlternateSetting(0)
                #expect(session.alternateSetting == 0)
                #expect(session.endpoints == endpoints)
                #expect(try await Self.echo(session, [5]) == [5])

                let missing = Self.failure(await Self.outcome { () async throws(AccessoryError) in
                    try await session.selectAlternateSetting(1)
                })
                #expect(missing?.code == .notFound, "\(String(describing: missing))")
                #expect(missing?.message.contains("no alternate setting 1") == true, "\(String(describing: missing))")
                #expect(missing?.message.contains("it has 0") == true, "\(String(describing: missing))")
                #expect(session.alternateSetting == 0)
                #expect(try await Self.echo(session, [6]) == [6])
            }
        }

        // MARK: Concurrency, the streams, unplugging

        @Test func anINWaitingOnOneEndpointDoesNotBlockAnOUTOnAnother() async throws {
            try await Self.run("1209:00e8:EPCONCUR") { _, _, session, _, _ in
                let reader = Task { await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 512, timeout: .seconds(10))
                } }
                try #require(await waitUntil { session.callsInFlight == 1 }, "the IN is submitted and waits")
                // If the OUT waited behind the IN, it would time out here: the IN cannot end
                // before the OUT's data is echoed.
                let start = ContinuousClock.now
                let out = await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferOut(0x01, Array("ping".utf8), timeout: .seconds(3))
                }
                #expect(throws: Never.self) { try out.get() }
                #expect(ContinuousClock.now - start < .seconds(3))
                let echoed = await reader.value
                #expect(try echoed.get() == Array("ping".utf8))
                #expect(session.callsInFlight == 0)
            }
        }

        @Test func transferInOnTheInputStreamsEndpointIsBusyWhileItReads() async throws {
            try await Self.run("1209:00e9:EPBUSY") { _, _, session, device, _ in
                let urbsBefore = try Self.count(device, "urbs")
                let reader = Task { await Self.outcome { () async throws(AccessoryError) in try await session.read() } }
                try #require(await waitUntil { session.pipe.waitingReads == 1 }, "the stream's read waits")
                let busy = Self.failure(await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferIn(0x81, length: 512, timeout: .seconds(1))
                })
                #expect(busy?.code == .busy, "\(String(describing: busy))")
                #expect(session.callsInFlight == 0, "the call submitted nothing")
                #expect(try Self.count(device, "urbs") > urbsBefore, "the stream's own IN transfers are in flight")
                reader.cancel()
                #expect(Self.failure(await reader.value)?.code == .cancelled)
                // Once the stream has stopped reading, the call is allowed on its endpoint.
                try #require(await waitUntil { !session.pipe.isReading }, "the stream stops reading")
                #expect(try await Self.echo(session, Array("mine".utf8)) == Array("mine".utf8))
            }
        }

        @Test func unplugDuringAPendingTransferInEndsItDisconnected() async throws {
            try await Self.run("1209:00ea:EPUNPLUG") { _, _, session, _, plugged in
                #expect(try await Self.echo(session, [9]) == [9])
                let reader = Task { () -> (Result<[UInt8], AccessoryError>, ContinuousClock.Instant) in
                    let result = await Self.outcome { () async throws(AccessoryError) in
                        try await session.transferIn(0x81, length: 512, timeout: .seconds(30))
                    }
                    return (result, ContinuousClock.now)
                }
                try #require(await waitUntil { session.callsInFlight == 1 }, "the IN is submitted and waits")
                try plugged.unplug("EPUNPLUG")
                let unplugged = ContinuousClock.now
                let (result, ended) = await reader.value
                #expect(Self.failure(result)?.code.disconnectReason == .unplugged, "\(result)")
                #expect(ended - unplugged < .seconds(5), "the IN ended \(ended - unplugged) after the unplug")
                // Later calls get the same reason at once.
                let later = Self.failure(await Self.outcome { () async throws(AccessoryError) in
                    try await session.transferOut(0x01, [1], timeout: .seconds(1))
                })
                #expect(later?.code.disconnectReason == .unplugged, "\(String(describing: later))")
            }
        }
    }
}
