import Foundation
import Testing

/// The `accessory-device-plugin` under test, as a child process (it inherits the
/// simulator's environment), and the simulator's `ctl`.
final class PluginProcess: Sendable {
    let process = Process()
    let logURL: URL

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `$ACCESSORY_DEVICE_PLUGIN`, or the one beside the test bundle.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["ACCESSORY_DEVICE_PLUGIN"] { return path }
        let candidate = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("accessory-device-plugin").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        return packageRoot.appendingPathComponent(".build/debug/accessory-device-plugin").path
    }

    init(kubeletDir: String, arguments: [String] = []) throws {
        logURL = URL(fileURLWithPath: kubeletDir).appendingPathComponent("plugin-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = [
            "--resource", "example.org/loopback", "--protocol", "org.example.loopback", "--kubelet-dir", kubeletDir,
            "--reconcile-interval", "0.5",
        ] + arguments
        let log = try FileHandle(forWritingTo: logURL)
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits for the exit; the status, or nil if it did not exit in time
    /// (then it is killed). A plugin that crashed is recorded as an issue, with its log.
    func stop(with signal: Int32, timeout: Double = 10) -> Int32? {
        kill(process.processIdentifier, signal)
        defer { recordCrash() }
        if waitForExit(timeout) { return process.terminationStatus }
        kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(10)
        return nil
    }

    /// Polls for the exit, up to `timeout` seconds: never `waitUntilExit()`, which can wait
    /// forever for a process that a crash handler holds.
    private func waitForExit(_ timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        // A poll with a deadline (see above).
        while process.isRunning && Date() < deadline { usleep(20_000) }
        return !process.isRunning
    }

    /// An issue when the plugin's log shows a Swift runtime crash (a trap, a fatal error).
    func recordCrash() {
        let log = self.log
        if log.contains("Fatal error") || log.contains("*** Program crashed") {
            Issue.record("accessory-device-plugin crashed; its log:\n\(log.prefix(6000))")
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(10)
        }
    }
}

/// `accessory-sim ctl`, for the simulator that runs these tests.
enum Simulator {
    static var isActive: Bool { ProcessInfo.processInfo.environment["ACCESSORY_SIM_SOCKET"] != nil }

    static var binary: String {
        ProcessInfo.processInfo.environment["ACCESSORY_SIM"]
            ?? PluginProcess.packageRoot.deletingLastPathComponent().appendingPathComponent(".build/debug/accessory-sim").path
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Runs one `ctl` command; returns its output's words.
    @discardableResult
    static func ctl(_ arguments: String...) throws -> [String] {
        try output(of: arguments).split(whereSeparator: \.isWhitespace).map(String.init)
    }

    private static func output(of arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["ctl"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw Failure(description: "ctl \(arguments.joined(separator: " ")): \(text)") }
        return text
    }

    /// The device with this serial in `ctl list` (`BUS ADDRESS PORT VID:PID SERIAL` lines).
    static func device(serial: String) throws -> (bus: Int, address: Int, port: String)? {
        try devices(serial: serial).first
    }

    /// Every device with this serial in `ctl list`, in its order.
    static func devices(serial: String) throws -> [(bus: Int, address: Int, port: String)] {
        var found: [(bus: Int, address: Int, port: String)] = []
        for line in try output(of: ["list"]).split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.count >= 5, words[4] == serial, let bus = Int(words[0]), let address = Int(words[1]) {
                found.append((bus, address, words[2]))
            }
        }
        return found
    }
}
