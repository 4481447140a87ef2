import AccessoryCapture
import AccessoryTestSupport
import Foundation
import Testing

@Suite("accessoryctl capture summary")
struct CaptureCLITests {
    /// A capture made by the package's writer: device 1:4 (GET_DESCRIPTOR answered 1209:0001),
    /// bulk OUT 0x01 twice (3 and 0 bytes), bulk IN 0x81 (5 bytes), a stalled bulk IN, a
    /// cancelled interrupt IN; device 2:9 with one control OUT.
    static func writeCapture(to path: String) throws {
        let writer = try USBCaptureWriter(path: path)
        let getDevice = USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: 18)
        try writer.submit(urbID: 1, bus: 1, device: 4, endpoint: 0x80, kind: .control, setup: getDevice, requestedLength: 18)
        try writer.complete(urbID: 1, bus: 1, device: 4, endpoint: 0x80, kind: .control, status: 0,
                            data: [18, 1, 0, 2, 0, 0, 0, 64, 0x09, 0x12, 0x01, 0x00, 0, 1, 1, 2, 3, 1])
        for (id, out) in [(2, [1, 2, 3]), (3, [])] as [(UInt64, [UInt8])] {
            try writer.submit(urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, data: out[...], requestedLength: out.count)
            try writer.complete(urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, status: 0, actualLength: out.count)
        }
        try writer.submit(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, requestedLength: 512)
        try writer.complete(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, status: 0, data: [5, 4, 3, 2, 1])
        try writer.submit(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, requestedLength: 512)
        try writer.complete(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, status: -32)
        try writer.submit(urbID: 5, bus: 1, device: 4, endpoint: 0x83, kind: .interrupt, requestedLength: 8)
        try writer.complete(urbID: 5, bus: 1, device: 4, endpoint: 0x83, kind: .interrupt, status: -2)
        let vendorOut = USBCapture.Setup(requestType: 0x40, request: 1, value: 2, index: 3, length: 2)
        try writer.submit(urbID: 1, bus: 2, device: 9, endpoint: 0x00, kind: .control, setup: vendorOut, data: [7, 7], requestedLength: 2)
        try writer.complete(urbID: 1, bus: 2, device: 9, endpoint: 0x00, kind: .control, status: 0, actualLength: 2)
    }

    /// Runs `body` with the path of a fresh capture of ``writeCapture(to:)`` in a temporary folder.
    static func withOwnCapture(_ body: (String) throws -> Void) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("own.pcapng").path
        try writeCapture(to: file)
        try body(file)
    }

    static let ownJSON = #"{"devices":[{"bus":1,"address":4,"vendor":"1209","product":"0001","endpoints":["#
        + #"{"endpoint":"0x01","kind":"bulk","completed":2,"bytes":3},"#
        + #"{"endpoint":"0x80","kind":"control","completed":1,"bytes":18},"#
        + #"{"endpoint":"0x81","kind":"bulk","completed":1,"bytes":5},"#
        + #"{"endpoint":"0x83","kind":"interrupt","completed":0,"bytes":0}]},"#
        + #"{"bus":2,"address":9,"endpoints":[{"endpoint":"0x00","kind":"control","completed":1,"bytes":2}]}]}"#

    @Test("--json on the package's own capture prints the contract's object exactly")
    func ownCaptureJSON() throws {
        try Self.withOwnCapture { file in
            let r = try CLI.ctl("capture", "summary", file, "--json")
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == Self.ownJSON + "\n")
            #expect(r.stderr.isEmpty)
        }
    }

    @Test("--json equals tshark's dissection on the package's own capture", .needsTshark)
    func ownCaptureEqualsTshark() throws {
        try Self.withOwnCapture { file in
            let r = try CLI.ctl("capture", "summary", file, "--json")
            #expect(try Tshark.counts(fromSummaryJSON: r.stdout) == Tshark.summary(of: file).counts)
        }
    }

    @Test("--json equals tshark's dissection on every shared capture", .needsCaptures, .needsTshark, arguments: SharedFolder.captureFiles)
    func sharedCaptureEqualsTshark(file: String) throws {
        let r = try CLI.ctl("capture", "summary", file, "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let tshark = try Tshark.summary(of: file)
        let ours = try Tshark.counts(fromSummaryJSON: r.stdout)
        #expect(ours == tshark.counts)
        for (key, counts) in ours where key.endpoint & 0x80 != 0 {
            #expect(counts.bytes == tshark.capturedBytes[key, default: 0], "\(key)")
        }
    }

    @Test("The human output is a table per device")
    func table() throws {
        try Self.withOwnCapture { file in
            let r = try CLI.ctl("capture", "summary", file)
            #expect(r.status == 0)
            #expect(r.stdout == """
                bus 1 address 4  1209:0001
                  ENDPOINT  KIND       COMPLETED  BYTES
                  0x01      bulk               2      3
                  0x80      control            1     18
                  0x81      bulk               1      5
                  0x83      interrupt          0      0

                bus 2 address 9
                  ENDPOINT  KIND     COMPLETED  BYTES
                  0x00      control          1      2

                """)
        }
    }

    @Test("A malformed file is an error naming the file, the offset and the reason (exit 1); a missing one too")
    func malformed() throws {
        try Self.withOwnCapture { file in
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            bytes[bytes.count - 4] ^= 0x01  // the last block's trailing length
            let lastBlock = bytes.count - 96
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let r = try CLI.ctl("capture", "summary", file, "--json")
            #expect(r.status == 1)
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.hasPrefix("error: \(file): at byte \(lastBlock): block length mismatch: 96 at the start, 97 at the end"))
        }
        let missing = try CLI.ctl("capture", "summary", "/nonexistent/none.pcapng")
        #expect(missing.status == 1)
        #expect(missing.stderr == "error: /nonexistent/none.pcapng: cannot open: No such file or directory\n")
        let usage = try CLI.ctl("capture", "summary")
        #expect(usage.status == 64)
    }

    @Test("A last packet cut short is a warning, and the rest is summarized (exit 0)")
    func truncated() throws {
        try Self.withOwnCapture { file in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            try bytes.prefix(bytes.count - 10).write(to: URL(fileURLWithPath: file))
            let r = try CLI.ctl("capture", "summary", file, "--json")
            #expect(r.status == 0)
            #expect(r.stderr.contains("warning: \(file): at byte \(bytes.count - 96): the last block is cut short"))
            #expect(r.stdout.contains(#"{"bus":2,"address":9,"endpoints":[{"endpoint":"0x00","kind":"control","completed":0,"bytes":0}]}"#))
        }
    }

    @Test("An endpoint whose data the capture cut is marked under CUT, with a warning; --json keeps the contract's fields")
    func cutData() throws {
        try Self.withOwnCapture { file in
            let capture = try USBCapture(path: file)
            let device = capture.devices[0]
            let index = try #require(capture.transfers(of: device).firstIndex { $0.endpoint == 0x81 && $0.status == 0 })
            let bytes = try CaptureCutter.cut(path: file, device: device, transfer: index, keep: 2)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let r = try CLI.ctl("capture", "summary", file)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("""
                bus 1 address 4  1209:0001
                  ENDPOINT  KIND       COMPLETED  BYTES  CUT
                  0x01      bulk               2      3
                  0x80      control            1     18
                  0x81      bulk               1      5    1
                  0x83      interrupt          0      0

                bus 2 address 9
                  ENDPOINT  KIND     COMPLETED  BYTES
                  0x00      control          1      2
                """), "\(r.stdout)")
            #expect(r.stderr.contains("warning: \(file): the capture cut the data of 1 transfer"), "\(r.stderr)")
            let json = try CLI.ctl("capture", "summary", file, "--json")
            #expect(json.stdout == Self.ownJSON + "\n")
        }
    }

    @Test("A file shorter than a block header is an error, not an empty summary")
    func tooShort() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("six.pcapng").path
        try Data([0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00]).write(to: URL(fileURLWithPath: file))
        let r = try CLI.ctl("capture", "summary", file)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: \(file): at byte 0: the section header block is cut short: 6 of at least 28 bytes"), "\(r.stderr)")
    }

    @Test("A 50 MB file of 2.5 million interface blocks is summarized within 64 MiB, saying what it dropped",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/time"), "needs /usr/bin/time to measure the peak RSS"))
    func hostileInterfaces() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("interfaces.pcapng")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: PcapngBlock.sectionHeader())
        let chunk = Array([[UInt8]](repeating: PcapngBlock.interfaceDescription(linkType: 220), count: 100_000).joined())
        for _ in 0..<25 { try handle.write(contentsOf: chunk) }
        try handle.close()
        let r = try CLI.run("/usr/bin/time", ["-f", "peak-rss-kb %M", CLI.accessoryctl, "capture", "summary", file.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("2495904 interfaces past the 4096 a section may have, and the 0 packets on them, were skipped"), "\(r.stderr)")
        let line = try #require(r.stderr.split(separator: "\n").last { $0.hasPrefix("peak-rss-kb ") })
        let kilobytes = try #require(Int(line.dropFirst("peak-rss-kb ".count)))
        #expect(kilobytes < 64 * 1024, "peak RSS \(kilobytes) KiB")
    }
}
