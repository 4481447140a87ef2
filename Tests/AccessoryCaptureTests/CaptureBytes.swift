import AccessoryCapture
import Foundation

/// Builds capture files byte by byte, for tests that need a shape no tool writes: other byte
/// orders, link types, options and hostile lengths.
enum CaptureBytes {
    /// A usbmon packet: `header` (its `capturedLength` set from `data` unless given) and `data`.
    static func usbmon(_ header: USBMonHeader, data: [UInt8] = [], headerLength: Int = 64, bigEndian: Bool = false) -> [UInt8] {
        var header = header
        if header.capturedLength == 0 { header.capturedLength = UInt32(data.count) }
        var w = ByteWriter(bigEndian: bigEndian)
        header.append(to: &w, headerLength: headerLength)
        w.raw(data)
        return w.bytes
    }

    /// `packet` (a little-endian usbmon packet with the 64-byte header) in another byte order
    /// or header length.
    static func convert(_ packet: [UInt8], bigEndian: Bool = false, headerLength: Int = 64) -> [UInt8] {
        let header = packet.withUnsafeBytes { try! USBMonHeader($0, headerLength: 64, bigEndian: false) }
        return usbmon(header, data: Array(packet[64...]), headerLength: headerLength, bigEndian: bigEndian)
    }

    /// The header of a little-endian usbmon packet with the 64-byte header.
    static func header(of packet: [UInt8]) -> USBMonHeader {
        packet.withUnsafeBytes { try! USBMonHeader($0, headerLength: 64, bigEndian: false) }
    }

    /// A submission header (status -EINPROGRESS).
    static func submit(
        _ id: UInt64, endpoint: UInt8, kind: USBCapture.Transfer.Kind = .bulk, device: UInt8 = 4, bus: UInt16 = 1,
        length: UInt32, setup: USBCapture.Setup? = nil
    ) -> USBMonHeader {
        var h = USBMonHeader(urbID: id, event: .submit, kind: kind, endpoint: endpoint, device: device, bus: bus, status: -115, length: length)
        if let setup {
            h.setupFlag = USBMonHeader.present
            h.setupField = setup.field
        }
        return h
    }

    /// A completion header.
    static func complete(
        _ id: UInt64, endpoint: UInt8, kind: USBCapture.Transfer.Kind = .bulk, device: UInt8 = 4, bus: UInt16 = 1,
        status: Int32 = 0, length: UInt32
    ) -> USBMonHeader {
        USBMonHeader(urbID: id, event: .complete, kind: kind, endpoint: endpoint, device: device, bus: bus, status: status, length: length)
    }

    /// One pcapng section: a header, one interface per link type, and each packet as an
    /// enhanced packet block of the interface `packet.interface`, one tick (a microsecond
    /// unless `resolution` says otherwise) after the last.
    static func pcapng(
        _ packets: [(interface: UInt32, bytes: [UInt8])], linkTypes: [UInt16] = [220], bigEndian: Bool = false,
        resolution: UInt8? = nil, firstTick: UInt64 = 1_000_000
    ) -> [UInt8] {
        var file = PcapngBlock.sectionHeader(bigEndian: bigEndian)
        for linkType in linkTypes {
            file += PcapngBlock.interfaceDescription(linkType: linkType, timestampResolution: resolution, bigEndian: bigEndian)
        }
        for (i, packet) in packets.enumerated() {
            file += PcapngBlock.enhancedPacket(interface: packet.interface, ticks: firstTick + UInt64(i), packet: packet.bytes, bigEndian: bigEndian)
        }
        return file
    }

    /// One pcapng section of usbmon packets on one interface of link type 220.
    static func pcapng(_ packets: [[UInt8]], bigEndian: Bool = false) -> [UInt8] {
        pcapng(packets.map { (0, $0) }, bigEndian: bigEndian)
    }

    /// A classic pcap file: its header, then each packet one second after the last.
    static func pcap(_ packets: [[UInt8]], linkType: UInt32 = 220, bigEndian: Bool = false, nanoseconds: Bool = false) -> [UInt8] {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(nanoseconds ? 0xa1b2_3c4d : 0xa1b2_c3d4)
        w.u16(2)
        w.u16(4)
        w.u32(0)
        w.u32(0)
        w.u32(262_144)
        w.u32(linkType)
        for (i, packet) in packets.enumerated() {
            w.u32(UInt32(100 + i))
            w.u32(nanoseconds ? 500_000_000 : 500_000)
            w.u32(UInt32(packet.count))
            w.u32(UInt32(packet.count))
            w.raw(packet)
        }
        return w.bytes
    }

    /// Three bulk transfers of device 1:4 (OUT 3 bytes, IN 2 bytes, OUT 0 bytes): six packets.
    static let threeTransfers: [[UInt8]] = [
        usbmon(submit(1, endpoint: 0x01, length: 3), data: [1, 2, 3]),
        usbmon(complete(1, endpoint: 0x01, length: 3)),
        usbmon(submit(2, endpoint: 0x81, length: 64)),
        usbmon(complete(2, endpoint: 0x81, length: 2), data: [9, 8]),
        usbmon(submit(3, endpoint: 0x01, length: 0)),
        usbmon(complete(3, endpoint: 0x01, length: 0)),
    ]
}

/// A temporary folder, removed when the test is done with it.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("capture-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` in the folder.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes `bytes` to `name` and returns its path.
    func write(_ bytes: [UInt8], to name: String) throws -> String {
        let path = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
