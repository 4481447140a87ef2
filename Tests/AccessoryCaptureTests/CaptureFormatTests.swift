import AccessoryCapture
import Testing

/// The shapes a usbmon capture comes in: byte orders, pcap and pcapng, several sections and
/// interfaces, clock resolutions, both header lengths; and how URBs pair.
@Suite("Capture formats and pairing")
struct CaptureFormatTests {
    typealias Make = CaptureBytes

    /// The three transfers of `CaptureBytes.threeTransfers`, as the reader must give them.
    static func expectThree(_ capture: USBCapture, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(capture.devices == [USBCapture.Device(bus: 1, address: 4)], sourceLocation: sourceLocation)
        let t = capture.transfers(of: USBCapture.Device(bus: 1, address: 4))
        #expect(t.map(\.endpoint) == [0x01, 0x81, 0x01], sourceLocation: sourceLocation)
        #expect(t.map(\.data) == [[1, 2, 3], [9, 8], []], sourceLocation: sourceLocation)
        #expect(t.map(\.requestedLength) == [3, 64, 0], sourceLocation: sourceLocation)
        #expect(t.map(\.status) == [0, 0, 0], sourceLocation: sourceLocation)
        #expect(t.allSatisfy { $0.kind == .bulk && $0.setup == nil }, sourceLocation: sourceLocation)
    }

    @Test("pcapng in either byte order, and two sections of different orders in one file")
    func byteOrders() throws {
        let little = Make.pcapng(Make.threeTransfers)
        let big = Make.pcapng(Make.threeTransfers.map { Make.convert($0, bigEndian: true) }, bigEndian: true)
        #expect(little != big)
        Self.expectThree(try USBCapture(bytes: little, name: "le"))
        Self.expectThree(try USBCapture(bytes: big, name: "be"))
        let both = try USBCapture(bytes: little + big, name: "two sections")
        let device = try #require(both.devices.first)
        #expect(both.transfers(of: device).count == 6)
        #expect(both.transfers(of: device).map(\.status) == [0, 0, 0, 0, 0, 0])
    }

    @Test("A little-endian section after a big-endian one is read little-endian again")
    func littleAfterBig() throws {
        let little = Make.pcapng(Make.threeTransfers)
        let big = Make.pcapng(Make.threeTransfers.map { Make.convert($0, bigEndian: true) }, bigEndian: true)
        let both = try USBCapture(bytes: big + little, name: "big, then little")
        #expect(both.devices == [USBCapture.Device(bus: 1, address: 4)])
        let t = both.transfers(of: USBCapture.Device(bus: 1, address: 4))
        #expect(t.map(\.endpoint) == [0x01, 0x81, 0x01, 0x01, 0x81, 0x01])
        #expect(t.map(\.data) == [[1, 2, 3], [9, 8], [], [1, 2, 3], [9, 8], []])
        #expect(t.map(\.status) == [0, 0, 0, 0, 0, 0])
    }

    @Test("Classic pcap: either byte order, microsecond and nanosecond magic, link types 220 and 189")
    func classicPcap() throws {
        for bigEndian in [false, true] {
            for nanoseconds in [false, true] {
                let packets = Make.threeTransfers.map { Make.convert($0, bigEndian: bigEndian) }
                let capture = try USBCapture(bytes: Make.pcap(packets, bigEndian: bigEndian, nanoseconds: nanoseconds), name: "pcap")
                Self.expectThree(capture)
                let t = try capture.transfersOfDevice()
                #expect(t.map(\.submitted) == [.zero, .seconds(2), .seconds(4)])
                #expect(t.map(\.completed) == [.seconds(1), .seconds(3), .seconds(5)])
            }
        }
        let short = Make.threeTransfers.map { Make.convert($0, headerLength: 48) }
        Self.expectThree(try USBCapture(bytes: Make.pcap(short, linkType: 189), name: "189"))
        Self.expectThree(try USBCapture(bytes: Make.pcapng(short.map { (0, $0) }, linkTypes: [189]), name: "189ng"))
    }

    @Test("if_tsresol: microseconds by default, milliseconds, and a binary resolution")
    func timestampResolution() throws {
        let cases: [(UInt8?, Duration)] = [(nil, .microseconds(2)), (3, .milliseconds(2)), (0x8a, .nanoseconds(1_953_125))]
        for (resolution, second) in cases {
            let bytes = Make.pcapng(Make.threeTransfers.map { (0, $0) }, resolution: resolution)
            let t = try USBCapture(bytes: bytes, name: "tsresol").transfers(of: USBCapture.Device(bus: 1, address: 4))
            try #require(t.count == 3)
            #expect(t[1].submitted == second, "resolution \(String(describing: resolution))")
        }
        let bad = Make.pcapng(Make.threeTransfers.map { (0, $0) }, resolution: 0x7f)
        let error = try #require(throws: USBCaptureError.self) { try USBCapture(bytes: bad, name: "bad") }
        #expect(error.offset == 28 && error.reason.contains("if_tsresol 0x7f is out of range"))
    }

    @Test("Simple packet blocks take their time from the usbmon header")
    func simplePackets() throws {
        var bytes = PcapngBlock.sectionHeader() + PcapngBlock.interfaceDescription(linkType: 220)
        for (i, p) in Make.threeTransfers.enumerated() {
            var header = Make.header(of: p)
            header.seconds = 1000 + Int64(i)
            let packet = Make.usbmon(header, data: Array(p[64...]))
            bytes += PcapngBlock.block(type: 3, bigEndian: false) { w in
                w.u32(UInt32(packet.count))
                w.raw(packet)
            }
        }
        let capture = try USBCapture(bytes: bytes, name: "spb")
        Self.expectThree(capture)
        #expect(try capture.transfersOfDevice().last?.completed == .seconds(5))
    }

    @Test("Isochronous descriptors are skipped, with both header lengths")
    func isochronous() throws {
        let descriptors = [UInt8](repeating: 0xd5, count: 32)
        for headerLength in [64, 48] {
            var s = Make.submit(7, endpoint: 0x02, kind: .isochronous, length: 4)
            s.descriptorCount = 2
            s.capturedLength = 36
            var c = Make.complete(7, endpoint: 0x02, kind: .isochronous, length: 4)
            c.descriptorCount = 2
            c.capturedLength = 32
            let bytes = Make.pcap(
                [Make.usbmon(s, data: descriptors + [1, 2, 3, 4], headerLength: headerLength), Make.usbmon(c, data: descriptors, headerLength: headerLength)],
                linkType: headerLength == 64 ? 220 : 189)
            let t = try USBCapture(bytes: bytes, name: "iso").transfers(of: USBCapture.Device(bus: 1, address: 4))
            #expect(t.count == 1)
            #expect(t.first?.kind == .isochronous)
            #expect(t.first?.data == [1, 2, 3, 4], "header \(headerLength)")
            #expect(t.first?.setup == nil)
        }
    }

    @Test("Pairing: by URB ID per bus; IDs reused after completion; an error record completes its submission; a lone completion is left out")
    func pairing() throws {
        let packets = [
            Make.usbmon(Make.submit(1, endpoint: 0x81, length: 8)),
            Make.usbmon(Make.submit(1, endpoint: 0x81, bus: 2, length: 16)),
            Make.usbmon(Make.complete(9, endpoint: 0x82, length: 1), data: [5]),  // its submission came before the capture
            Make.usbmon(Make.complete(1, endpoint: 0x81, bus: 2, length: 1), data: [2]),
            Make.usbmon(Make.complete(1, endpoint: 0x81, length: 1), data: [1]),
            Make.usbmon(Make.submit(1, endpoint: 0x01, length: 2), data: [3, 3]),  // ID 1 reused
            Make.usbmon(USBMonHeader(urbID: 1, event: .error, kind: .bulk, endpoint: 0x01, device: 4, bus: 1, dataFlag: 0x45, status: -19)),
            Make.usbmon(Make.submit(2, endpoint: 0x81, length: 8)),
            Make.usbmon(Make.submit(2, endpoint: 0x81, length: 9)),  // the first ID 2 never completed
            Make.usbmon(Make.complete(2, endpoint: 0x81, status: -2, length: 0)),
            Make.usbmon(Make.submit(3, endpoint: 0x81, length: 4)),  // never completes
        ]
        let capture = try USBCapture(bytes: Make.pcapng(packets), name: "pairing")
        #expect(capture.devices == [USBCapture.Device(bus: 1, address: 4), USBCapture.Device(bus: 2, address: 4)])
        let one = try capture.transfersOfDevice()
        #expect(one.map(\.requestedLength) == [8, 2, 8, 9, 4])
        #expect(one.map(\.status) == [0, -19, nil, -2, nil])
        #expect(one.map(\.data) == [[1], [3, 3], [], [], []])
        #expect(one.map(\.completed) == [.microseconds(4), .microseconds(6), nil, .microseconds(9), nil])
        #expect(try capture.transfersOfDevice(1).map(\.data) == [[2]])
        #expect(capture.transfers(of: USBCapture.Device(bus: 3, address: 1)).isEmpty)
    }

    @Test("Control: the setup from the submission, OUT data from it, IN data from the completion, vendor and product from GET_DESCRIPTOR")
    func control() throws {
        let getDevice = USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: 18)
        let descriptor: [UInt8] = [18, 1, 0, 2, 0, 0, 0, 64, 0x09, 0x12, 0x01, 0x00, 0, 1, 1, 2, 3, 1]
        let vendorOut = USBCapture.Setup(requestType: 0x40, request: 0x0c, value: 0xbeef, index: 0x0102, length: 3)
        let packets = [
            Make.usbmon(Make.submit(5, endpoint: 0x80, kind: .control, length: 18, setup: getDevice)),
            Make.usbmon(Make.complete(5, endpoint: 0x80, kind: .control, length: 18), data: descriptor),
            Make.usbmon(Make.submit(5, endpoint: 0x00, kind: .control, length: 3, setup: vendorOut), data: [7, 7, 7]),
            Make.usbmon(Make.complete(5, endpoint: 0x00, kind: .control, status: -32, length: 0)),
        ]
        let capture = try USBCapture(bytes: Make.pcapng(packets), name: "control")
        #expect(capture.devices == [USBCapture.Device(bus: 1, address: 4, vendor: 0x1209, product: 0x0001)])
        let t = try capture.transfersOfDevice()
        #expect(t.map(\.setup) == [getDevice, vendorOut])
        #expect(t.map(\.data) == [descriptor, [7, 7, 7]])
        #expect(t.map(\.status) == [0, -32])
        #expect(t.map(\.endpoint) == [0x80, 0x00])
    }

    @Test("Reading through buffers of every size from 16 to 300 bytes gives the same capture")
    func chunkBoundaries() throws {
        let bytes = Make.pcapng(Make.threeTransfers) + Make.pcapng(Make.threeTransfers, bigEndian: true)
        let whole = try USBCapture(bytes: bytes, name: "whole")
        for chunk in 16...300 {
            let capture = try USBCapture(bytes: bytes, name: "chunked", chunkSize: chunk)
            #expect(try capture.transfersOfDevice() == whole.transfersOfDevice(), "chunk \(chunk)")
        }
    }
}
