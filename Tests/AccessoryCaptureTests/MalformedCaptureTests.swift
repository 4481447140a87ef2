import AccessoryCapture
import Testing

/// Each hostile file throws a USBCaptureError naming the byte where the wrong block or record
/// starts; a file cut short in its last packet keeps what came before.
@Suite("Malformed captures")
struct MalformedCaptureTests {
    /// The error reading `bytes`, or a failure when there is none.
    static func error(_ bytes: [UInt8], chunkSize: Int? = nil) -> USBCaptureError? {
        do {
            _ = try USBCapture(bytes: bytes, name: "bad.pcapng", chunkSize: chunkSize)
            return nil
        } catch {
            return error
        }
    }

    static let section = PcapngBlock.sectionHeader() + PcapngBlock.interfaceDescription(linkType: 220)
    static let packets = CaptureBytes.threeTransfers.map { PcapngBlock.enhancedPacket(ticks: 1, packet: $0) }

    /// A valid file whose block at index `i` (after the section's two) is replaced.
    static func file(replacingPacket i: Int, with block: [UInt8]) -> (bytes: [UInt8], offset: Int) {
        var blocks = packets
        blocks[i] = block
        let offset = section.count + packets[..<i].reduce(0) { $0 + $1.count }
        return (section + blocks.joined(), offset)
    }

    /// `block` with the 32-bit field at `offset` set to `value` (little-endian).
    static func patch(_ block: [UInt8], at offset: Int, _ value: UInt32) -> [UInt8] {
        var block = block
        for i in 0..<4 { block[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
        return block
    }

    @Test("An empty file, a file of other bytes and a bad byte-order magic fail at byte 0")
    func badMagic() throws {
        let empty = try #require(Self.error([]))
        #expect(empty.offset == 0 && empty.reason.contains("empty"))
        let text = try #require(Self.error(Array("hello, world\n".utf8)))
        #expect(text.offset == 0 && text.reason.contains("not a pcap or pcapng file"))
        #expect(text.description == "bad.pcapng: at byte 0: not a pcap or pcapng file: it starts with 0x6c6c6568")
        let order = try #require(Self.error(Self.patch(Self.section, at: 8, 0x1234_5678) + Self.packets.joined()))
        #expect(order.offset == 0 && order.reason.contains("byte-order magic"))
    }

    @Test("A file header cut short fails at byte 0: pcapng and pcap")
    func truncatedHeader() throws {
        let pcapng = try #require(Self.error(Array(Self.section.prefix(20))))
        #expect(pcapng.offset == 0 && pcapng.reason.contains("section header block is cut short"))
        let pcap = try #require(Self.error(Array(CaptureBytes.pcap([]).prefix(10))))
        #expect(pcap.offset == 0 && pcap.reason.contains("pcap file header is cut short: 10 of 24 bytes"))
        let three = try #require(Self.error([0x0a, 0x0d, 0x0d]))
        #expect(three.offset == 0 && three.reason.contains("cut short"))
    }

    @Test("A block length that is not a multiple of 4 fails at its block, in every chunk size", arguments: [nil, 7, 64, 100] as [Int?])
    func notMultipleOfFour(chunkSize: Int?) throws {
        let (bytes, offset) = Self.file(replacingPacket: 1, with: Self.patch(Self.packets[1], at: 4, 97))
        let error = try #require(Self.error(bytes, chunkSize: chunkSize))
        #expect(error.offset == offset)
        #expect(error.offset == 148)
        #expect(error.reason == "block length 97 is not a multiple of 4")
    }

    @Test("A block whose trailing length differs from its leading one fails at its block")
    func lengthMismatch() throws {
        let block = Self.packets[2]
        let (bytes, offset) = Self.file(replacingPacket: 2, with: Self.patch(block, at: block.count - 4, 200))
        let error = try #require(Self.error(bytes))
        #expect(error.offset == offset)
        #expect(error.reason == "block length mismatch: \(block.count) at the start, 200 at the end")
    }

    @Test("Huge lengths fail at their block or record, before any allocation")
    func hugeLengths() throws {
        let (bytes, offset) = Self.file(replacingPacket: 1, with: Self.patch(Self.packets[1], at: 4, 0xFFFF_FFF0))
        let block = try #require(Self.error(bytes))
        #expect(block.offset == offset && block.reason.contains("over the limit"))
        var pcap = CaptureBytes.pcap(CaptureBytes.threeTransfers)
        let second = 24 + 16 + CaptureBytes.threeTransfers[0].count
        pcap = Array(pcap[..<(second + 8)]) + Self.patch([0, 0, 0, 0], at: 0, 0x7FFF_FFFF) + pcap[(second + 12)...]
        let record = try #require(Self.error(pcap))
        #expect(record.offset == second && record.reason.contains("captured length 2147483647 is over the limit"))
        let captured = try #require(Self.error(Self.file(replacingPacket: 0, with: Self.patch(Self.packets[0], at: 20, 5000)).bytes))
        #expect(captured.offset == 48 && captured.reason.contains("runs past the end"))
    }

    @Test("A block shorter than its fields, a packet of an undeclared interface, a short usbmon header, an unknown URB type")
    func badFields() throws {
        let tiny = try #require(Self.error(Self.file(replacingPacket: 0, with: Self.patch(Self.packets[0], at: 4, 8)).bytes))
        #expect(tiny.offset == 48 && tiny.reason.contains("less than the 12 bytes"))
        let interface = try #require(Self.error(Self.file(replacingPacket: 1, with: Self.patch(Self.packets[1], at: 8, 3)).bytes))
        #expect(interface.offset == 148 && interface.reason == "the packet names interface 3, but its section has 1 interface")
        let short = try #require(Self.error(Self.file(replacingPacket: 2, with: PcapngBlock.enhancedPacket(ticks: 1, packet: [UInt8](repeating: 0x53, count: 40))).bytes))
        #expect(short.offset == 148 + Self.packets[1].count && short.reason.contains("40 bytes, fewer than its 64-byte header"))
        var unknown = CaptureBytes.threeTransfers[0]
        unknown[8] = UInt8(ascii: "X")
        let type = try #require(Self.error(Self.file(replacingPacket: 0, with: PcapngBlock.enhancedPacket(ticks: 1, packet: unknown)).bytes))
        #expect(type.offset == 48 && type.reason.contains("unknown URB type 0x58"))
    }

    @Test("Packets of other link types are skipped, beside usbmon ones in the same section")
    func otherLinkTypesSkipped() throws {
        let ethernet = [UInt8](repeating: 0xee, count: 60)
        var packets: [(interface: UInt32, bytes: [UInt8])] = []
        for (i, p) in CaptureBytes.threeTransfers.enumerated() {
            packets.append((1, p))
            if i % 2 == 0 { packets.append((0, ethernet)) }
        }
        let bytes = CaptureBytes.pcapng(packets, linkTypes: [1, 220, 189])
        let capture = try USBCapture(bytes: bytes, name: "mixed")
        #expect(capture.devices == [USBCapture.Device(bus: 1, address: 4)])
        #expect(try capture.transfersOfDevice().map(\.data) == [[1, 2, 3], [9, 8], []])
        let onlyEthernet = try USBCapture(bytes: CaptureBytes.pcap([ethernet, ethernet], linkType: 1), name: "ethernet")
        #expect(onlyEthernet.devices.isEmpty)
    }

    @Test("A last packet cut short is dropped, and what came before is kept: pcapng and pcap, any chunk size", arguments: [nil, 5, 64] as [Int?])
    func truncatedLastPacket(chunkSize: Int?) throws {
        let whole = Self.section + Self.packets.joined()
        let lastStart = whole.count - Self.packets[2].count
        for cut in [lastStart + 3, lastStart + 40, whole.count - 1] {
            let capture = try USBCapture(bytes: Array(whole.prefix(cut)), name: "cut.pcapng", chunkSize: chunkSize)
            let transfers = try capture.transfersOfDevice()
            try #require(transfers.count == 3)
            #expect(transfers[2].status == nil, "the completion of the zero-length OUT was cut off")
            #expect(transfers[1].data == [9, 8])
            #expect(capture.truncation?.offset == lastStart)
        }
        let exact = try USBCapture(bytes: whole, name: "whole.pcapng", chunkSize: chunkSize)
        #expect(exact.truncation == nil)
        let pcap = CaptureBytes.pcap(CaptureBytes.threeTransfers)
        let last = pcap.count - 16 - CaptureBytes.threeTransfers[5].count
        for cut in [last + 7, last + 20] {
            let capture = try USBCapture(bytes: Array(pcap.prefix(cut)), name: "cut.pcap", chunkSize: chunkSize)
            #expect(try capture.transfersOfDevice().map(\.status) == [0, 0, nil])
            #expect(capture.truncation?.offset == last)
        }
    }

    @Test("A second section cut short after the first is a truncation, not an error")
    func truncatedSecondSection() throws {
        let one = Self.section + Self.packets.joined()
        let capture = try USBCapture(bytes: one + Array(Self.section.prefix(10)), name: "two")
        #expect(capture.truncation?.offset == one.count)
        #expect(try capture.transfersOfDevice().count == 3)
    }

    @Test("A file that cannot be opened names the file and the reason")
    func missingFile() {
        #expect(throws: USBCaptureError(file: "/nonexistent/x.pcapng", offset: nil, reason: "cannot open: No such file or directory")) {
            try USBCapture(path: "/nonexistent/x.pcapng")
        }
    }
}
