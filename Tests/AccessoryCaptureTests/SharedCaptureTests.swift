import AccessoryCapture
import AccessoryTestSupport
import Foundation
import Testing

/// The real captures in ../shared/captures: each reads with no error, and its summary equals
/// tshark's own dissection.
@Suite("Shared captures")
struct SharedCaptureTests {
    static let files = SharedFolder.captureFiles

    static func counts(_ summary: USBCaptureSummary) -> [Tshark.Endpoint: Tshark.Counts] { Tshark.counts(of: summary) }

    @Test("Every shared capture reads with no error and no truncation, with paired transfers", .needsCaptures, arguments: files)
    func readsWithNoError(file: String) throws {
        let capture = try USBCapture(path: file)
        #expect(capture.truncation == nil)
        #expect(!capture.devices.isEmpty)
        let summary = try USBCaptureSummary(path: file)
        #expect(summary.devices.map(\.device) == capture.devices)
        for (device, entry) in zip(capture.devices, summary.devices) {
            let transfers = capture.transfers(of: device)
            for e in entry.endpoints {
                let done = transfers.filter { $0.endpoint == e.address && $0.kind == e.kind && $0.status == 0 }
                // Every completion in these captures has its submission in them.
                #expect(done.count == e.completed, "\(device) 0x\(String(e.address, radix: 16))")
                #expect(done.filter(\.isIn).reduce(0) { $0 + $1.data.count } == (e.address & 0x80 != 0 ? e.bytes : 0))
            }
            for t in transfers {
                #expect((t.kind == .control) == (t.setup != nil))
                #expect(t.completed.map { $0 >= t.submitted } ?? true)
                if t.isIn { #expect(t.data.count <= t.requestedLength) }
                // Nothing in these captures was cut by a snap length.
                #expect(!t.isCut && t.length == t.data.count, "\(device) transfer at \(t.submitted)")
            }
        }
    }

    @Test("The shared captures name their devices: bus, address, vendor and product", .needsCaptures)
    func devices() throws {
        let expected: [String: [String]] = [
            "synaptics": ["1:4 06cb:00bd"],
            "elan-cobo": ["1:45 04f3:0c26"],
            "fpcmoc": ["1:19 10a5:ffe0"],  // the descriptor as recorded; the umockdev file says a306
            "egis0570": ["1:1 1d6b:0002", "1:5 1c7a:0570", "1:4 0bda:0129", "1:3 0bda:5621", "1:2 8087:0a2a"],
        ]
        for file in Self.files {
            let name = URL(fileURLWithPath: file).deletingLastPathComponent().lastPathComponent
            guard let want = expected[name] else { continue }
            let got = try USBCapture(path: file).devices.map { d in
                "\(d.bus):\(d.address) " + [d.vendor, d.product].map { String(format: "%04x", $0 ?? 0) }.joined(separator: ":")
            }
            #expect(got == want, "\(name)")
        }
    }

    @Test("The summary equals tshark's dissection: completions with status 0 and their urb_len, per device and endpoint", .needsCaptures, .needsTshark, arguments: files)
    func summaryEqualsTshark(file: String) throws {
        let tshark = try Tshark.summary(of: file)
        let ours = Self.counts(try USBCaptureSummary(path: file))
        #expect(ours == tshark.counts)
        // For IN endpoints the bytes moved are the bytes captured (usb.data_len) too.
        for (key, counts) in ours where key.endpoint & 0x80 != 0 {
            #expect(counts.bytes == tshark.capturedBytes[key, default: 0], "\(key)")
        }
    }

    @Test("A capture of several sections reads as their concatenation", .needsCaptures)
    func concatenatedSections() throws {
        let file = try #require(Self.files.first { $0.contains("synaptics") } ?? Self.files.first)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let one = try USBCaptureSummary(path: file)
        let three = try USBCaptureSummary(bytes: bytes + bytes + bytes, name: "three", chunkSize: 4096)
        #expect(three.events == 3 * one.events)
        for (a, b) in zip(one.devices, three.devices) {
            #expect(b.endpoints.map(\.completed) == a.endpoints.map { 3 * $0.completed })
            #expect(b.endpoints.map(\.bytes) == a.endpoints.map { 3 * $0.bytes })
        }
    }
}
