import AccessoryCapture
import AccessoryTestSupport
import Foundation
import Testing

/// USBCaptureWriter's files: read back by USBCapture as written, dissected by tshark with no
/// malformed packet, and readable after every record.
@Suite("Capture writer")
struct CaptureWriterTests {
    static let getDevice = USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: 18)
    static let descriptor: [UInt8] = [18, 1, 0, 2, 0xef, 2, 1, 64, 0x09, 0x12, 0x01, 0x00, 0, 1, 1, 2, 3, 1]

    /// Control IN and OUT, bulk IN and OUT, interrupt IN, a stall, a cancelled URB, a
    /// zero-length OUT, a failed submission, two URBs in flight at once, an ID reused, one
    /// never completed, and a second device on another bus.
    static var conversation: CaptureScript {
        var s = CaptureScript()
        s.transfer(0xffff_8881_0000_0100, endpoint: 0x80, kind: .control, setup: getDevice, requested: 18, back: descriptor)
        s.transfer(0xffff_8881_0000_0200, endpoint: 0x00, kind: .control,
                   setup: USBCapture.Setup(requestType: 0x41, request: 0x0c, value: 0x1234, index: 2, length: 5), out: [1, 2, 3, 4, 5])
        s.transfer(0xffff_8881_0000_0300, endpoint: 0x00, kind: .control,
                   setup: USBCapture.Setup(requestType: 0x00, request: 9, value: 1, index: 0, length: 0))  // SET_CONFIGURATION
        s.transfer(0xffff_8881_0000_0400, endpoint: 0x01, kind: .bulk, out: Array(0..<200).map { UInt8($0) })
        s.transfer(0xffff_8881_0000_0500, endpoint: 0x81, kind: .bulk, requested: 512, back: Array(repeating: 0xab, count: 77))
        s.transfer(0xffff_8881_0000_0600, endpoint: 0x83, kind: .interrupt, requested: 8, back: [1, 0, 0, 0, 0, 0, 0, 2])
        s.transfer(0xffff_8881_0000_0700, endpoint: 0x81, kind: .bulk, requested: 64, status: -32)  // stall
        s.transfer(0xffff_8881_0000_0800, endpoint: 0x01, kind: .bulk, out: [])  // zero-length OUT
        s.transfer(0xffff_8881_0000_0900, endpoint: 0xc0 & 0x80, kind: .control,
                   setup: USBCapture.Setup(requestType: 0xc0, request: 1, value: 0, index: 0, length: 4), requested: 4, status: -32)
        // Two in flight; the second completes first.
        s.events.append(.submit(id: 0xa0, bus: 1, device: 4, endpoint: 0x83, kind: .interrupt, setup: nil, data: [], requested: 8))
        s.events.append(.submit(id: 0xb0, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, setup: nil, data: [9, 9], requested: 2))
        s.events.append(.complete(id: 0xb0, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, status: 0, data: [], actual: 2))
        s.events.append(.complete(id: 0xa0, bus: 1, device: 4, endpoint: 0x83, kind: .interrupt, status: -2, data: [], actual: 0))  // cancelled
        s.transfer(0xa0, endpoint: 0x81, kind: .bulk, requested: 16, back: [5])  // ID reused
        s.events.append(.submit(id: 0xc0, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, setup: nil, data: [1], requested: 1))
        s.events.append(.fail(id: 0xc0, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, status: -19))  // -ENODEV at submission
        s.transfer(0xa0, bus: 2, device: 7, endpoint: 0x82, kind: .bulk, requested: 4, back: [1, 2, 3, 4])
        s.events.append(.submit(id: 0xd0, bus: 1, device: 4, endpoint: 0x83, kind: .interrupt, setup: nil, data: [], requested: 8))  // never completes
        return s
    }

    @Test("A conversation of every kind reads back exactly, after every record with the writer still open")
    func roundTrip() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("conversation.pcapng")
        let script = Self.conversation
        var sizes: [Int] = []
        try script.write(to: path) { i in
            // Flushed per packet: the file as it is now reads as the events so far.
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
            #expect(size > (sizes.last ?? 0))
            sizes.append(size)
            let now = try USBCapture(path: path)
            #expect(same(now.contents, script.expected(events: i + 1)), "after event \(i)")
            #expect(now.truncation == nil)
        }
        let capture = try USBCapture(path: path)
        #expect(same(capture.contents, script.expected()))
        #expect(capture.devices == [USBCapture.Device(bus: 1, address: 4, vendor: 0x1209, product: 0x0001), USBCapture.Device(bus: 2, address: 7)])
        let transfers = try capture.transfersOfDevice()
        #expect(transfers.first?.submitted == .zero)
        #expect(transfers.first?.completed == CaptureScript.step)
        #expect(transfers.map(\.status).contains(-32) && transfers.map(\.status).contains(-2) && transfers.map(\.status).contains(-19))
        #expect(transfers.last?.status == nil)
        // A process killed mid-write: every cut keeps the records before it.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for (i, end) in sizes.enumerated() where i + 1 < sizes.count {
            let cut = try USBCapture(bytes: Array(bytes.prefix(end + 50)), name: "cut")
            #expect(same(cut.contents, script.expected(events: i + 1)))
            #expect(cut.truncation?.offset == end)
        }
    }

    @Test("tshark dissects the writer's file with no malformed packet, and its lengths are the ones written", .needsTshark)
    func tsharkReadsIt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("conversation.pcapng")
        let script = Self.conversation
        try script.write(to: path)
        let verbose = try Tshark.verbose(path)
        #expect(verbose.contains("URB_SUBMIT"))
        #expect(!verbose.contains("Malformed"))
        #expect(!verbose.contains("Expert Info (Error"))
        #expect(verbose.contains("idVendor: ") && verbose.contains("(0x1209)"))
        let rows = try Tshark.run(["-r", path, "-T", "fields", "-E", "separator= ", "-e", "usb.urb_type", "-e", "usb.urb_len", "-e", "usb.data_len"])
        #expect(rows.split(separator: "\n").map(String.init) == script.tsharkRows)
        let tshark = try Tshark.summary(of: path)
        #expect(SharedCaptureTests.counts(try USBCaptureSummary(path: path)) == tshark.counts)
    }

    @Test("A writer that cannot create its file names the file and the reason")
    func cannotCreate() {
        #expect(throws: USBCaptureError(file: "/nonexistent/c.pcapng", offset: nil, reason: "cannot create: No such file or directory")) {
            try USBCaptureWriter(path: "/nonexistent/c.pcapng")
        }
    }
}
