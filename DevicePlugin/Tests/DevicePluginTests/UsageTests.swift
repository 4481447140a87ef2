import Foundation
import Testing

/// Bad flags are refused before anything starts, with the reason (exit 64).
@Suite("accessory-device-plugin's usage errors")
struct UsageTests {
    private func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PluginProcess.binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("Each bad flag gets its reason", arguments: [
        (["--resource", "loopback"], "--resource must be DOMAIN/NAME"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/nonexistent-kubelet-dir"], "is not a directory"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp", "--endpoint", "a/b.sock"], "--endpoint must be a file name"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp", "--endpoint", "kubelet.sock"], "--endpoint must be a file name"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp/" + String(repeating: "d", count: 120)], "is not a directory"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp", "--endpoint", String(repeating: "e", count: 110) + ".sock"], "at most 107"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp", "--reconcile-interval", "0"], "--reconcile-interval"),
        (["--resource", "example.org/loopback", "--kubelet-dir", "/tmp", "--metrics", "9464"], "--metrics: '9464' is not a HOST:PORT"),
    ])
    func refused(arguments: [String], reason: String) throws {
        let (status, output) = try run(arguments)
        #expect(status == 64, "\(output)")
        #expect(output.contains(reason), "\(output)")
    }
}
