import Foundation
import Testing

/// `accessoryctl control` refuses what Linux usbfs refuses: more than 4,096 bytes in one
/// control transfer. It is bad usage (exit 64), said before any device is opened.
@Suite("accessoryctl control: the host's control-transfer limit")
struct ControlLimitCLITests {
    static let base = ["control", "1209:0001", "--type", "vendor", "--request", "1"]

    @Test("--length or --data over 4,096 bytes is a usage error that says what the limit is and why", arguments: [
        (["--in", "--length", "4097"], 4097), (["--in", "--length", "65535"], 65535),
        (["--out", "--data", String(repeating: "ab", count: 5000)], 5000),
    ])
    func overTheLimit(arguments: [String], bytes: Int) throws {
        let r = try CLI.run(CLI.accessoryctl, Self.base + arguments)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(
            r.stderr.contains(
                "control transfer of \(bytes) bytes exceeds Linux usbfs's limit of 4096 bytes per control transfer (libusb MAX_CTRL_BUFFER_LENGTH)"),
            "\(r.stderr)")
    }

    @Test("A negative --length is a usage error naming the range", arguments: ["-1", "-9223372036854775808"])
    func negative(length: String) throws {
        let r = try CLI.run(CLI.accessoryctl, Self.base + ["--in", "--length=\(length)"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("0...4096") || r.stderr.contains("0–4096"), "\(r.stderr)")
    }

    @Test("--help gives the limit")
    func help() throws {
        let r = try CLI.run(CLI.accessoryctl, ["control", "--help"])
        #expect(r.stdout.contains("0–4096"), "\(r.stdout)")
    }
}
