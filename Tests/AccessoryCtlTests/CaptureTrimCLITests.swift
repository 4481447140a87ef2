import AccessoryTestSupport
import Foundation
import Testing

@Suite("accessoryctl capture trim")
struct CaptureTrimCLITests {
    @Test("Trimming a two-device capture to 1:4: tshark reads the result, capture summary shows one device, and it says what it dropped", .needsTshark)
    func keepsOneDevice() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("two.pcapng").path, output = dir.appendingPathComponent("one.pcapng").path
        try CaptureCLITests.writeCapture(to: input)
        let before = try CLI.run(OpenCLI.accessoryctl, ["capture", "summary", input, "--json"])
        #expect(before.stdout.components(separatedBy: #""bus":"#).count - 1 == 2, "two devices to start with: \(before.stdout)")
        let trim = try CLI.run(OpenCLI.accessoryctl, ["capture", "trim", input, "--device", "1:4", "-o", output])
        #expect(trim.status == 0, "\(trim.stderr)")
        #expect(trim.stderr.contains("dropped 2 packets: devices 2:9"), "\(trim.stderr)")
        _ = try Tshark.run(["-r", output])  // throws when tshark cannot read it
        #expect(!(try Tshark.verbose(output)).contains("Malformed"))
        let after = try CLI.run(OpenCLI.accessoryctl, ["capture", "summary", output, "--json"])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stdout.components(separatedBy: #""bus":"#).count - 1 == 1, "\(after.stdout)")
        #expect(after.stdout.contains(#""bus":1,"address":4,"vendor":"1209","product":"0001""#), "\(after.stdout)")
        let missing = try CLI.run(OpenCLI.accessoryctl, ["capture", "trim", input, "--device", "1:5", "-o", output])
        #expect(missing.status == 1 && missing.stderr.contains("has no packet of device 1:5"), "\(missing.stderr)")
        let bad = try CLI.run(OpenCLI.accessoryctl, ["capture", "trim", input, "--device", "1-4", "-o", output])
        #expect(bad.status != 0 && bad.stderr.contains("--device must be BUS:ADDRESS"), "\(bad.stderr)")
    }
}
