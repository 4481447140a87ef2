import AccessoryCapture
import AccessoryTestSupport
import Foundation
import Testing

/// USBCaptureTrim: one device's traffic, with its enumeration at address 0, out of a capture
/// of several; and which device a capture names when one enumerates during it.
@Suite("Capture trim")
struct CaptureTrimTests {
    static let getDevice = USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: 18)
    static let reader: [UInt8] = [18, 1, 0, 2, 0, 0, 0, 64, 0xcb, 0x06, 0xbd, 0x00, 0, 1, 1, 2, 3, 1]
    static let keyboard: [UInt8] = [18, 1, 0, 2, 0, 0, 0, 8, 0x6d, 0x04, 0x1c, 0xc3, 0, 1, 1, 2, 0, 1]

    static func setAddress(_ address: UInt16) -> USBCapture.Setup {
        USBCapture.Setup(requestType: 0x00, request: 5, value: address, index: 0, length: 0)
    }

    /// A keyboard at 1:3 typing throughout; the reader enumerating at address 0 (a first,
    /// failed SET_ADDRESS to 6, then 7), then talking at 1:7; a device on bus 2.
    static var twoDevices: CaptureScript {
        var s = CaptureScript()
        s.transfer(0x100, device: 3, endpoint: 0x81, kind: .interrupt, requested: 8, back: [0, 0, 4, 0, 0, 0, 0, 0])
        s.transfer(0x200, device: 0, endpoint: 0x80, kind: .control, setup: getDevice, requested: 64, back: Array(reader[..<8]))
        s.transfer(0x300, device: 0, endpoint: 0x00, kind: .control, setup: setAddress(6), status: -71)
        s.transfer(0x310, device: 0, endpoint: 0x00, kind: .control, setup: setAddress(7))
        s.transfer(0x400, device: 7, endpoint: 0x80, kind: .control, setup: getDevice, requested: 18, back: reader)
        s.transfer(0x500, device: 3, endpoint: 0x81, kind: .interrupt, requested: 8, back: [0, 0, 5, 0, 0, 0, 0, 0])
        s.transfer(0x600, device: 7, endpoint: 0x01, kind: .bulk, out: [0xa7, 0xfe])
        s.transfer(0x700, device: 7, endpoint: 0x81, kind: .bulk, requested: 64, back: [1, 2, 3])
        s.transfer(0x800, bus: 2, device: 2, endpoint: 0x80, kind: .control, setup: getDevice, requested: 18, back: keyboard)
        return s
    }

    @Test("Trimming to 1:7 keeps its transfers and its enumeration, drops the keyboard, the other bus and nothing else")
    func keepsOneDevice() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("bus.pcapng").path, output = dir.appendingPathComponent("reader.pcapng").path
        try Self.twoDevices.write(to: input)
        let report = try USBCaptureTrim.trim(input, bus: 1, address: 7, to: output)
        #expect(report.keptPackets == 12 && report.enumerationPackets == 6, "\(report)")
        #expect(report.droppedPackets == 6 && report.droppedDevices == ["1:3", "2:2"], "\(report)")
        let trimmed = try USBCapture(path: output)
        #expect(trimmed.devices.map { "\($0.bus):\($0.address)" } == ["1:0", "1:7"])
        let reader = try #require(trimmed.devices.first { $0.address == 7 })
        #expect(reader.vendor == 0x06cb && reader.product == 0x00bd)
        #expect(trimmed.transfers(of: reader).map(\.endpoint) == [0x80, 0x01, 0x81])
        let summary = try USBCaptureSummary(path: output)
        #expect(summary.devices.count == 2)
        #expect(try USBCaptureTrim.trim(input, bus: 1, address: 9, to: output).keptPackets == 0)
    }

    @Test("A device enumerating during the capture: the address-0 entry carries no IDs, so it never stands in for the device")
    func addressZeroIsNotTheDevice() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("bus.pcapng").path
        try Self.twoDevices.write(to: input)
        let capture = try USBCapture(path: input)
        let zero = try #require(capture.devices.first { $0.address == 0 })
        #expect(zero.vendor == nil && zero.product == nil, "the address-0 entry is whatever is enumerating, not the reader")
        let picked = try #require(capture.devices.first { $0.vendor == 0x06cb })
        #expect(picked.address == 7)
        let summary = try USBCaptureSummary(path: input)
        #expect(summary.devices.filter { $0.device.vendor == 0x06cb }.map(\.device.address) == [7])
    }

    @Test("Trimming a real whole-bus capture (five devices) to the reader: tshark reads it, and it holds one device", .needsCaptures, .needsTshark)
    func trimsARealCapture() throws {
        let input = SharedFolder.captures.appendingPathComponent("egis0570/capture.pcapng").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("reader.pcapng").path
        let before = try USBCapture(path: input)
        let reader = try #require(before.devices.first { $0.vendor == 0x1c7a })
        let report = try USBCaptureTrim.trim(input, bus: reader.bus, address: reader.address, to: output)
        #expect(report.droppedDevices.count == before.devices.count - 1, "\(report)")
        let after = try USBCapture(path: output)
        #expect(after.devices.map(\.address) == [reader.address])
        // The same transfers; only their times, counted from the first packet kept, move.
        #expect(after.transfers(of: after.devices[0]).map(Self.shape) == before.transfers(of: reader).map(Self.shape))
        let rows = try Tshark.run(["-r", output, "-T", "fields", "-e", "usb.device_address"]).split(separator: "\n")
        #expect(rows.count == report.keptPackets && rows.allSatisfy { $0 == "\(reader.address)" })
    }

    /// A transfer without its times.
    static func shape(_ t: USBCapture.Transfer) -> String {
        "\(t.endpoint) \(t.kind) \(t.setup.map { "\($0)" } ?? "-") \(t.data) \(t.requestedLength) \(t.status.map(String.init) ?? "-")"
    }
}
