import Foundation

/// Runs the built `accessoryctl` (or another program) and captures its output.
enum CLI {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The accessoryctl binary: `$ACCESSORYCTL`, or the one beside this test bundle.
    static var accessoryctl: String {
        if let path = ProcessInfo.processInfo.environment["ACCESSORYCTL"] { return path }
        let bin = Bundle.main.bundleURL.deletingLastPathComponent()
        let candidate = bin.appendingPathComponent("accessoryctl").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        return packageRoot.appendingPathComponent(".build/debug/accessoryctl").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(stdin)
            try input.fileHandleForWriting.close()
        }
        // Read both pipes concurrently so a full stderr pipe cannot block the child.
        let errors = PipeReader(err)
        errors.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errors.waitForEnd()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errors.data, as: UTF8.self))
    }

    static func ctl(_ arguments: String..., stdin: String? = nil) throws -> Result {
        try run(accessoryctl, arguments, stdin: stdin.map { Data($0.utf8) })
    }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("accessoryctl-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
