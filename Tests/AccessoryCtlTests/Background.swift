import AccessoryTestSupport
import Foundation

/// A running `accessoryctl` (or shell) process whose output is collected in files.
final class Background {
    let process = Process()
    let stdoutURL: URL
    let stderrURL: URL

    init(_ executable: String, _ arguments: [String], in dir: URL, environment: [String: String]? = nil) throws {
        stdoutURL = dir.appendingPathComponent("out-\(UUID().uuidString)")
        stderrURL = dir.appendingPathComponent("err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits until `condition` holds on stdout, up to `timeout` seconds.
    func waitForOutput(timeout: Double = 10, _ condition: (String) -> Bool) -> Bool {
        pollUntil(timeout: .seconds(timeout)) { condition(stdout) }
    }

    /// Sends `signal` and waits for the exit; returns the status (128+N for a signal death).
    func stop(with signal: Int32, timeout: Double = 15) -> Int32 {
        kill(process.processIdentifier, signal)
        return waitForExit(timeout: timeout)
    }

    func waitForExit(timeout: Double = 15) -> Int32 {
        pollUntil(timeout: .seconds(timeout)) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}
