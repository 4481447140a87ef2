import Foundation

/// The `accessory-sim` these CLI tests run under (scripts/test starts it), driven through
/// `accessory-sim ctl`.
enum Simulator {
    static var isActive: Bool { ProcessInfo.processInfo.environment["ACCESSORY_SIM_SOCKET"] != nil }

    static var binary: String {
        ProcessInfo.processInfo.environment["ACCESSORY_SIM"]
            ?? CLI.packageRoot.appendingPathComponent(".build/debug/accessory-sim").path
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Runs one `ctl` command; returns the words of its `ok …` reply.
    @discardableResult
    static func ctl(_ arguments: String...) throws -> [String] {
        try ctl(arguments)
    }

    /// Plugs an accessory and returns its `BUS:ADDRESS`.
    static func plug(_ spec: String, port: String? = nil) throws -> String {
        let words = try ctl(["plug", spec] + (port.map { ["--port", $0] } ?? []))
        return "\(words[1]):\(words[2])"
    }

    @discardableResult
    static func ctl(_ arguments: [String]) throws -> [String] {
        let r = try CLI.run(binary, ["ctl"] + arguments)
        guard r.status == 0 else { throw Failure(description: "ctl \(arguments.joined(separator: " ")): \(r.stdout)\(r.stderr)") }
        return r.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
    }
}

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
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(stdout) { return true }
            usleep(20_000)
        }
        return condition(stdout)
    }

    /// Sends `signal` and waits for the exit; returns the status (128+N for a signal death).
    func stop(with signal: Int32, timeout: Double = 15) -> Int32 {
        kill(process.processIdentifier, signal)
        return waitForExit(timeout: timeout)
    }

    func waitForExit(timeout: Double = 15) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}
