import AccessoryCapture
import AccessoryCore
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Synchronization
import Testing
import AccessoryLocking

/// How a replayed device matches the host's transfers against its recording: divergences,
/// optional transfers, recorded statuses, pacing, and a capture the package made itself.
@Suite("Replay matching", .timeLimit(.minutes(1)))
struct ReplayMatchingTests {
    static let reader = "com.example.reader"

    /// A capture written transfer by transfer, each at the time given.
    final class CaptureBuilder: Sendable {
        let path: String
        private let writer: USBCaptureWriter
        private let time = Locked(Duration.seconds(1_000_000))
        private let nextID = Locked(UInt64(1))

        /// The device and configuration descriptors of the reader every builder records.
        static let descriptors: (device: [UInt8], configuration: [UInt8]) = {
            let device = USBDeviceDescriptor(
                bcdUSB: 0x0200, deviceClass: 0, deviceSubclass: 0, deviceProtocol: 0, maxPacketSize0: 64, vendor: 0x1209,
                product: 0x0042, bcdDevice: 0x0100, manufacturerIndex: 0, productIndex: 0, serialNumberIndex: 0, configurationCount: 1)
            let configuration = USBConfiguration(value: 1, interfaces: [
                USBInterface(
                    number: 0, alternate: 0, interfaceClass: 0xff, interfaceSubclass: 0, interfaceProtocol: 0, nameIndex: 0,
                    endpoints: [
                        USBEndpoint(address: 0x01, attributes: 2, maxPacketSize: 64, interval: 0),
                        USBEndpoint(address: 0x81, attributes: 2, maxPacketSize: 64, interval: 0),
                        USBEndpoint(address: 0x83, attributes: 3, maxPacketSize: 8, interval: 1),
                    ])
            ])
            return (USBDescriptorEncoder.device(device), USBDescriptorEncoder.configuration(configuration))
        }()

        init(_ name: String, describing: Bool = true) throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).pcapng").path
            let time = self.time
            writer = try USBCaptureWriter(path: path, now: { time.withLock { $0 } })
            // The descriptors, as an enumeration shows them: bulk OUT 0x01, bulk IN 0x81, interrupt IN 0x83.
            guard describing else { return }
            for (value, bytes) in [(UInt16(0x0100), Self.descriptors.device), (0x0200, Self.descriptors.configuration)] {
                try control(USBCapture.Setup(requestType: 0x80, request: 6, value: value, index: 0, length: UInt16(bytes.count)), answer: bytes)
            }
        }

        /// Records one transfer: submitted now, completed `after` later with `status` (none: never).
        func transfer(
            _ endpoint: UInt8, kind: USBCapture.Transfer.Kind = .bulk, setup: USBCapture.Setup? = nil, out: [UInt8] = [],
            answer: [UInt8] = [], length: Int = 64, status: Int32? = 0, after: Duration = .milliseconds(1)
        ) throws {
            let id = nextID.withLock { id in
                defer { id += 1 }
                return id
            }
            try writer.submit(urbID: id, bus: 1, device: 7, endpoint: endpoint, kind: kind, setup: setup, data: out[...], requestedLength: endpoint & 0x80 != 0 ? length : out.count)
            time.withLock { $0 += after }
            if let status {
                try writer.complete(urbID: id, bus: 1, device: 7, endpoint: endpoint, kind: kind, status: status, data: answer[...], actualLength: endpoint & 0x80 != 0 ? answer.count : out.count)
            }
        }

        func control(_ setup: USBCapture.Setup, out: [UInt8] = [], answer: [UInt8] = [], status: Int32 = 0) throws {
            try transfer(setup.requestType & 0x80, kind: .control, setup: setup, out: out, answer: answer, length: Int(setup.length), status: status)
        }

        func capture() throws -> (USBCapture, USBCapture.Device) {
            let capture = try USBCapture(path: path)
            return (capture, try #require(capture.devices.first))
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Runs `body` with a session on the replayed device (which speaks `reader` by a device rule).
    static func withReplay(
        _ builder: CaptureBuilder, pacing: ReplayPacing = .immediate,
        _ body: @Sendable (SimulatedUSB, AccessoryManager, Accessory, AccessorySession) async throws -> Void
    ) async throws -> SimulatedReplayReport {
        let (capture, device) = try builder.capture()
        let usb = SimulatedUSB()
        let replayed = await usb.plug(try SimulatedAccessory(replaying: capture, device: device, pacing: pacing))
        let table = ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x0042, speaks: reader)])
        try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: reader) { session in
                try await body(usb, manager, accessory, session)
            }
        }
        return await usb.replayReport(of: replayed)
    }

    static func failure(_ body: () async throws -> Void) async -> AccessoryError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? AccessoryError
        }
    }

    @Test("Another setup, other OUT data, and an OUT beyond the recording each fail that transfer, naming its index, endpoint and bytes")
    func divergences() async throws {
        let b = try CaptureBuilder("divergences")
        try b.control(USBCapture.Setup(requestType: 0x40, request: 2, value: 1, index: 0, length: 3), out: [1, 2, 3])  // transfer 2
        try b.control(USBCapture.Setup(requestType: 0xc0, request: 3, value: 0, index: 0, length: 4), answer: [9, 9, 9, 9])  // 3
        try b.transfer(0x01, out: [0xa7, 0xfe])  // 4
        try b.transfer(0x81, answer: [0x90, 0x00])  // 5
        let report = try await Self.withReplay(b) { _, manager, accessory, session in
            let data = await Self.failure { try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 2, value: 1), data: [1, 2, 4]) }
            #expect(data?.code == .io)
            #expect(data?.message.contains("transfer 2 of the capture (control)") == true, "\(String(describing: data))")
            #expect(data?.message.contains("data at byte 2") == true && data?.message.contains("expected 03, got 04") == true, "\(String(describing: data))")
            let setup = await Self.failure { _ = try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 3, value: 5), length: 4) }
            #expect(setup?.message.contains("transfer 3 of the capture (control) diverges: setup at byte 2") == true, "\(String(describing: setup))")
            #expect(setup?.message.contains("expected 00 00 00 00 04 00, got 05 00 00 00 04 00") == true, "\(String(describing: setup))")
            try await session.transferOut(0x01, [0xa7, 0xfe])
            #expect(try await session.transferIn(0x81, length: 64) == [0x90, 0x00])
            let beyond = await Self.failure { try await session.transferOut(0x01, [0x01]) }
            #expect(beyond?.message.contains("nothing is left on bulk OUT 0x01") == true, "\(String(describing: beyond))")
        }
        #expect(report.matched == 2)
        #expect(report.divergences.count == 3)
        #expect(report.unconsumed == 0)
    }

    @Test("A cancelled IN in the middle is passed over; a last one that never completed waits until the host gives up; nothing needed is left")
    func optionalTransfers() async throws {
        let b = try CaptureBuilder("optional")
        try b.transfer(0x83, kind: .interrupt, length: 8, status: -2)  // cancelled by the host
        try b.transfer(0x83, kind: .interrupt, answer: [1], length: 8)
        try b.transfer(0x83, kind: .interrupt, length: 8, status: nil)  // the capture ends first
        let report = try await Self.withReplay(b) { usb, _, _, session async throws in
            // Were the cancelled IN not passed over, this read would wait for good.
            #expect(try await withDeadline("the read after a cancelled IN") { try await session.transferIn(0x83, length: 8) } == [1])
            let waiting = Task { await Self.failure { _ = try await session.transferIn(0x83, length: 8, timeout: .seconds(1)) } }
            await usb.advance(by: .seconds(2))
            #expect(await waiting.value?.code == .timeout)
            // Beyond the recording: it waits too, and the report counts it.
            let beyond = Task { await Self.failure { _ = try await session.transferIn(0x83, length: 8, timeout: .seconds(1)) } }
            await usb.advance(by: .seconds(2))
            #expect(await beyond.value?.code == .timeout)
        }
        #expect(report == SimulatedReplayReport(matched: 1, divergences: [], unconsumed: 0, waitingBeyondRecording: 1))
    }

    @Test("A recorded stall (-EPIPE) is a stall until the halt is cleared; what the app never asked for is unconsumed")
    func stallAndUnconsumed() async throws {
        let b = try CaptureBuilder("stall")
        try b.transfer(0x81, status: -32)
        try b.transfer(0x81, answer: [5, 6])
        try b.transfer(0x01, out: [1])
        try b.transfer(0x01, out: [2])
        let report = try await Self.withReplay(b) { _, _, _, session in
            let stall = await Self.failure { _ = try await session.transferIn(0x81, length: 64) }
            #expect(stall?.code == .stall)
            try await session.clearHalt(0x81)
            #expect(try await session.transferIn(0x81, length: 64) == [5, 6])
            try await session.transferOut(0x01, [1])
        }
        #expect(report == SimulatedReplayReport(matched: 3, divergences: [], unconsumed: 1))
        #expect(!report.isComplete)
    }

    @Test("pacing: .recorded answers after the recorded duration, on the virtual clock; .immediate at once")
    func pacing() async throws {
        let b = try CaptureBuilder("pacing")
        try b.transfer(0x81, answer: [7], after: .seconds(2))
        let report = try await Self.withReplay(b, pacing: .recorded) { usb, _, _, session async throws in
            let done = Mutex(false)
            let read = Task {
                let bytes = try await session.transferIn(0x81, length: 64)
                done.withLock { $0 = true }
                return bytes
            }
            await usb.advance(by: .seconds(1))
            #expect(!done.withLock { $0 }, "not before its recorded duration")
            await usb.advance(by: .milliseconds(1500))
            #expect(try await read.value == [7])
        }
        #expect(report.matched == 1)
        let immediate = try await Self.withReplay(b) { _, _, _, session async throws in
            #expect(try await session.transferIn(0x81, length: 64) == [7])
        }
        #expect(immediate.isComplete)
    }

    @Test("A capture the package recorded (control data, a refused request, an echo) replays with the same answers")
    func ownCaptureReplays() async throws {
        let dir = try CaptureRecordingTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let path = try await CaptureRecordingTests.record(payload, chunk: 1000, in: dir)
        let capture = try USBCapture(path: path)
        let device = try #require(capture.devices.first)
        let recorded = capture.transfers(of: device)
        let outs = recorded.filter { $0.kind == .bulk && !$0.isIn && $0.status == 0 }
        let inBytes = recorded.filter { $0.kind == .bulk && $0.isIn && $0.status == 0 }.reduce(0) { $0 + $1.data.count }
        let usb = SimulatedUSB()
        let replayed = await usb.plug(try SimulatedAccessory(replaying: capture, device: device))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            #expect(try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 1, value: 0x1234), length: 4) == [0xde, 0xad, 0xbe, 0xef])
            try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 2, index: 3), data: [9, 8, 7])
            let refused = await Self.failure { try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 5), data: []) }
            #expect(refused?.code == .stall)
            let echoed = try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                for t in outs { try await session.transferOut(0x01, t.data) }
                return try await session.read(exactly: inBytes)
            }
            #expect(echoed == payload)
        }
        let report = await usb.replayReport(of: replayed)
        #expect(report.isComplete, "\(report)")
        #expect(report.matched == 3 + outs.count + recorded.filter { $0.kind == .bulk && $0.isIn && $0.status == 0 }.count)
    }

    @Test("A bulk OUT with one byte wrong, against a capture the package recorded, fails naming its transfer, endpoint and byte")
    func wrongBulkOutByte() async throws {
        let dir = try CaptureRecordingTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let path = try await CaptureRecordingTests.record(payload, chunk: 1000, in: dir)
        let capture = try USBCapture(path: path)
        let device = try #require(capture.devices.first)
        let recorded = capture.transfers(of: device)
        let first = try #require(recorded.first { $0.kind == .bulk && !$0.isIn && $0.status == 0 && $0.data.count > 1 })
        var wrong = first.data
        let at = wrong.count / 2
        wrong[at] ^= 0x5a
        let usb = SimulatedUSB()
        let replayed = await usb.plug(try SimulatedAccessory(replaying: capture, device: device))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                let failure = await Self.failure { try await session.transferOut(first.endpoint, wrong) }
                #expect(failure?.code == .io, "\(String(describing: failure))")
                #expect(failure?.message.contains("(bulk OUT 0x01) diverges: at byte \(at) ") == true, "\(String(describing: failure))")
            }
        }
        let report = await usb.replayReport(of: replayed)
        #expect(report.divergences.count == 1, "\(report)")
    }

    @Test("A capture without descriptors takes them from a umockdev recording (by ID when the capture knows it, else by bus and address); a bad one is named with its line")
    func umockdevFallback() async throws {
        let b = try CaptureBuilder("bare", describing: false)
        try b.transfer(0x81, answer: [3])
        let (capture, device) = try b.capture()
        let hex = (Self.CaptureBuilder.descriptors.device + Self.CaptureBuilder.descriptors.configuration).map { String(format: "%02X", $0) }.joined()
        let dir = try CaptureRecordingTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func recording(_ text: String) throws -> String {
            let path = dir.appendingPathComponent("device-\(UUID().uuidString)").path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let root = "P: /devices/pci0000:00/usb1\nA: busnum=1\\n\nA: devnum=1\\n\nH: descriptors=12010002090001406B1D0200080503020101\n\n"
        let good = try recording(root + "P: /devices/pci0000:00/usb1/1-3\nA: busnum=1\\n\nA: devnum=7\\n\nA: serial=RDR9\\n\nH: descriptors=\(hex)\n")
        let usb = SimulatedUSB()
        let accessory = try SimulatedAccessory(replaying: capture, device: device, recording: good)
        #expect(accessory.vendor == 0x1209 && accessory.product == 0x0042)
        #expect(accessory.interfaces.first?.endpoints.map(\.address) == [0x01, 0x81, 0x83])
        let replayed = await usb.plug(accessory)
        #expect(await usb.replayReport(of: replayed).unconsumed == 1)
        // Another address but the same IDs: found by vendor and product.
        let byID = try recording("P: /devices/x/1-4\nA: busnum=2\nA: devnum=9\nA: idVendor=1209\nA: idProduct=0042\nH: descriptors=\(hex)\n")
        var described = device
        described.vendor = 0x1209
        described.product = 0x0042
        #expect(try SimulatedAccessory(replaying: capture, device: described, recording: byID).product == 0x0042)
        // A capture that knows the IDs takes the device with them, not another at its address.
        var other = Self.CaptureBuilder.descriptors.device
        other[10] = 0x99
        let otherHex = (other + Self.CaptureBuilder.descriptors.configuration).map { String(format: "%02X", $0) }.joined()
        let mixed = try recording(
            "P: /devices/x/1-3\nA: busnum=1\nA: devnum=7\nA: idVendor=1209\nA: idProduct=0099\nH: descriptors=\(otherHex)\n\n"
                + "P: /devices/x/2-4\nA: busnum=2\nA: devnum=9\nA: idVendor=1209\nA: idProduct=0042\nH: descriptors=\(hex)\n")
        #expect(try SimulatedAccessory(replaying: capture, device: described, recording: mixed).product == 0x0042)
        #expect(try SimulatedAccessory(replaying: capture, device: device, recording: mixed).product == 0x0099, "no IDs: by bus and address")
        let bad = try recording(root + "P: /devices/x/1-3\nA: busnum=1\nA: devnum=7\nH: descriptors=12ZZ\n")
        #expect {
            try SimulatedAccessory(replaying: capture, device: device, recording: bad)
        } throws: { error in
            "\(error)".contains("\(bad):9: the descriptors attribute is not hexadecimal bytes")
        }
        #expect {
            try SimulatedAccessory(replaying: capture, device: device, recording: try recording(root))
        } throws: { error in
            "\(error)".contains("has no device at bus 1 address 7") && "\(error)".contains("1d6b:0002 on bus 1 address 1")
        }
    }

    @Test("A capture with no descriptors and no umockdev recording throws, naming both missing descriptors and the device")
    func missingDescriptors() throws {
        let b = try CaptureBuilder("nodescriptors", describing: false)
        try b.transfer(0x81, answer: [3])
        let (capture, device) = try b.capture()
        #expect {
            try SimulatedAccessory(replaying: capture, device: device)
        } throws: { error in
            (error as? AccessoryError)?.code == .notFound
                && "\(error)".contains("cannot replay the device at bus 1 address 7: no device descriptor and no configuration descriptor")
                && "\(error)".contains("no umockdev recording was given")
        }
    }

    @Test("An interface with only an IN endpoint opens a session: one-transfer calls read it, the write stream says there is no OUT endpoint")
    func inOnlyInterface() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(
            vendor: 0x1209, product: 0x0043, interfaces: [
                SimulatedInterface(protocol: Self.reader, endpoints: [AccessoryEndpoint(address: 0x81, kind: .bulk, maxPacketSize: 64)])
            ],
            responder: SimulatedResponder { transfer, _ in transfer.endpoint == 0x81 ? .data([0x42]) : .stall }))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: Self.reader) { session in
                #expect(session.endpoints == [AccessoryEndpoint(address: 0x81, kind: .bulk, maxPacketSize: 64)])
                #expect(try await session.transferIn(0x81, length: 64) == [0x42])
                let write = await Self.failure {
                    try await session.write([1, 2, 3])
                    try await session.flush()
                }
                #expect(write?.code == .notFound && write?.message.contains("has no OUT endpoint") == true, "\(String(describing: write))")
                try await session.clearHalt()  // only the IN endpoint's halt is cleared; the missing OUT is skipped
            }
        }
    }
}
