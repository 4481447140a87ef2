import AccessoryCore
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// `Configuration(capturePath:)`: every transfer the manager makes is in the capture, as usbmon
/// would show it, and `USBCapture` and tshark read it back.
@Suite("Recording a capture")
struct CaptureRecordingTests {
    static let device = SimulatedAccessory(
        vendor: 0x1209, product: 0x0007, serial: "CAP",
        responder: SimulatedResponder(
            onWrite: { _, bytes in .respond([bytes]) },
            onControl: { request, data in
                switch (request.request, data) {
                case (1, nil): return .data([0xde, 0xad, 0xbe, 0xef])
                case (2, .some): return .accept
                default: return .stall
                }
            }))

    /// Echoes `payload` in writes of `chunk` bytes, sends two control requests (one refused),
    /// and returns the capture's path.
    static func record(_ payload: [UInt8], chunk: Int, in dir: URL) async throws -> String {
        let path = dir.appendingPathComponent("session.pcapng").path
        let usb = SimulatedUSB()
        await usb.plug(device)
        try await withAccessoryManager(configuration: .init(capturePath: path), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            #expect(try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 1, value: 0x1234), length: 4) == [0xde, 0xad, 0xbe, 0xef])
            try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 2, index: 3), data: [9, 8, 7])
            await #expect(throws: AccessoryError.self) {
                try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 5), data: [])
            }
            let echoed = try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                var echoed: [UInt8] = []
                for start in stride(from: 0, to: payload.count, by: chunk) {
                    try await session.write(Array(payload[start..<min(start + chunk, payload.count)]))
                }
                try await session.flush()
                while echoed.count < payload.count { echoed += try await session.read() ?? [] }
                return echoed
            }
            #expect(echoed == payload)
        }
        return path
    }

    @Test("Bulk OUT data in the capture is what was written, bulk IN what came back; control setups and a stall are there")
    func sessionAndControlAreRecorded() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = SplitMix64(seed: 27)
        let payload = rng.bytes(100_000)
        let path = try await Self.record(payload, chunk: 3_000, in: dir)

        let capture = try USBCapture(path: path)
        let device = try #require(capture.devices.first)
        #expect(capture.devices.count == 1)
        #expect(device.bus == 1)
        let transfers = capture.transfers(of: device)
        // The device's descriptors come first, as the GET_DESCRIPTOR answers of an enumeration:
        // device, configuration, the languages, then strings 1–4 (manufacturer, product,
        // serial, the interface's name), each as the device would send it.
        let descriptors = transfers.prefix { $0.setup?.request == 6 }
        #expect(descriptors.map { $0.setup!.value } == [0x0100, 0x0200, 0x0300, 0x0301, 0x0302, 0x0303, 0x0304])
        #expect(descriptors.first?.data.count == 18 && descriptors.first?.data[8...11] == [0x09, 0x12, 0x07, 0x00])
        let parsed = try #require(try? USBDescriptorParser.parseConfiguration(descriptors.dropFirst().first?.data ?? []))
        #expect(parsed.configuration.interfaces.first?.endpoints.map(\.address) == [0x01, 0x81])
        let name = descriptors.last?.data ?? []
        #expect(String(decoding: stride(from: 2, to: name.count, by: 2).map { UInt16(name[$0]) | UInt16(name[$0 + 1]) << 8 }, as: UTF16.self) == "org.example.loopback")
        let control = transfers.filter { $0.kind == .control && $0.setup?.request != 6 }
        #expect(control.map { $0.setup?.request } == [1, 2, 5])
        #expect(control.first?.setup?.value == 0x1234 && control.first?.data == [0xde, 0xad, 0xbe, 0xef])
        #expect(control.first?.endpoint == 0x80 && control.dropFirst().first?.endpoint == 0x00)
        #expect(control.dropFirst().first?.data == [9, 8, 7] && control.dropFirst().first?.setup?.index == 3)
        #expect(control.map(\.status) == [0, 0, -32], "the refused request is a stall (-EPIPE)")

        let outs = transfers.filter { $0.kind == .bulk && $0.endpoint == 0x01 }
        let ins = transfers.filter { $0.kind == .bulk && $0.endpoint == 0x81 }
        #expect(outs.allSatisfy { $0.status == 0 })
        #expect(outs.flatMap(\.data) == payload, "bulk OUT carries the bytes written, in order")
        #expect(ins.filter { $0.status == 0 }.flatMap(\.data) == payload, "bulk IN carries the echo, in order")
        // Reads still in flight when the session closed were cancelled, as usbmon shows them.
        #expect(ins.allSatisfy { $0.status == 0 || $0.status == -2 }, "\(Set(ins.map(\.status)))")
        #expect(transfers.allSatisfy { $0.completed != nil }, "every URB completed")
    }

    @Test("One-transfer calls are recorded too: each transferOut and transferIn is one URB on its endpoint")
    func oneTransferCallsAreRecorded() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("calls.pcapng").path
        let usb = SimulatedUSB()
        await usb.plug(Self.device)
        try await withAccessoryManager(configuration: .init(capturePath: path), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                try await session.transferOut(0x01, [1, 2, 3], timeout: .seconds(1))
                #expect(try await session.transferIn(0x81, length: 64, timeout: .seconds(1)) == [1, 2, 3])
                try await session.transferOut(0x01, [], timeout: .seconds(1))
            }
        }
        let capture = try USBCapture(path: path)
        let transfers = capture.transfers(of: try #require(capture.devices.first)).filter { $0.kind == .bulk }
        #expect(transfers.map(\.endpoint) == [0x01, 0x81, 0x01])
        #expect(transfers.map(\.data) == [[1, 2, 3], [1, 2, 3], []])
        #expect(transfers.map(\.requestedLength) == [3, 64, 0])
        #expect(transfers.allSatisfy { $0.status == 0 })
    }

    @Test("tshark reads the capture with no malformed packet, and counts what capture summary counts", .needsTshark)
    func tsharkReadsIt() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = SplitMix64(seed: 7)
        let path = try await Self.record(rng.bytes(20_000), chunk: 1_000, in: dir)
        let dissection = try Tshark.verbose(path)
        #expect(!dissection.contains("Malformed"))
        #expect(!dissection.contains("Expert Info (Error"))
        let theirs = try Tshark.summary(of: path).counts
        let ours = Tshark.counts(of: try USBCaptureSummary(path: path))
        #expect(!theirs.isEmpty)
        #expect(ours == theirs)
    }

    @Test("A device that gets an address another device had is described again: the capture shows each instance's descriptors")
    func reusedAddressIsDescribedAgain() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("reused.pcapng").path
        var second = Self.device
        second.product = 0x0008
        let usb = SimulatedUSB()
        var first = await usb.plug(Self.device)
        let request = ControlRequest(.vendor, request: 1)
        try await withAccessoryManager(configuration: .init(capturePath: path), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            _ = try await manager.controlTransfer(from: accessory, request, length: 4)
            // Silent replugs through every other address, until the next plug wraps to the first's.
            let address = first.address
            let before = address == 2 ? 127 : address - 1  // addresses wrap from 127 to 2
            while first.address != before { first = await usb.replug(first, silently: true) }
            await usb.unplug(first)
            let other = await usb.plug(second, port: first.port)
            #expect(other.address == address)
            let replaced = try #require(await manager.connectedAccessories.first { $0.descriptor.product == 0x0008 })
            _ = try await manager.controlTransfer(from: replaced, request, length: 4)
        }
        let capture = try USBCapture(path: path)
        let device = try #require(capture.devices.first)
        let described = capture.transfers(of: device).filter { $0.setup?.request == 6 && $0.setup?.value == 0x0100 }
        // The product ID is bytes 10 and 11 of each device descriptor.
        #expect(described.map { $0.data.count > 11 ? Int($0.data[10]) | Int($0.data[11]) << 8 : -1 } == [0x0007, 0x0008])
    }

    @Test("A capture path that cannot be created stops the manager from starting, naming the path")
    func unwritablePath() async throws {
        let usb = SimulatedUSB()
        await #expect {
            _ = try await AccessoryManager(configuration: .init(capturePath: "/nonexistent-dir/x.pcapng"), usb: usb)
        } throws: { error in
            guard let error = error as? AccessoryError else { return false }
            return error.code == .io && error.message.contains("/nonexistent-dir/x.pcapng")
        }
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}
