import Foundation
import Testing

/// The `accessory-sim` testbed the hardware tests run under, and its control commands.
enum SimulatorEnvironment {
    static let environment = ProcessInfo.processInfo.environment

    /// Whether the tests run under `accessory-sim` (it sets `ACCESSORY_SIM_SOCKET`).
    static var isActive: Bool { environment["ACCESSORY_SIM_SOCKET"] != nil }

    /// Whether the tests run under a plain umockdev testbed, such as `umockdev-run -d DUMP`.
    static var isUmockdevOnly: Bool { environment["UMOCKDEV_DIR"] != nil && !isActive }

    /// The simulator binary: `$ACCESSORY_SIM`, else `.build/debug/accessory-sim` in the package.
    static var binary: String {
        if let path = environment["ACCESSORY_SIM"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/accessory-sim").path
    }

    /// One device instance as the simulator reports it.
    struct Device: Hashable, Sendable, CustomStringConvertible {
        var bus: Int
        var address: Int
        var port: String
        var id: String { "\(bus):\(address)" }
        var description: String { "\(bus):\(address)@\(port)" }
    }

    /// One line of `ctl list`.
    struct Listing: Hashable, Sendable {
        var device: Device
        var vendorProduct: String
        var serial: String?
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `accessory-sim ctl ARGS…` and returns its output; throws when it exits non-zero.
    @discardableResult
    static func ctl(_ arguments: String...) throws -> String {
        try ctl(arguments)
    }

    @discardableResult
    static func ctl(_ arguments: [String]) throws -> String {
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
        guard process.terminationStatus == 0 else {
            throw Failure(description: "accessory-sim ctl \(arguments.joined(separator: " ")): exit \(process.terminationStatus): \(text)")
        }
        return text
    }

    /// Parses an `ok BUS ADDRESS PORT` reply.
    static func device(fromReply reply: String) throws -> Device {
        let words = reply.split(whereSeparator: \.isWhitespace)
        guard words.count >= 4, words[0] == "ok", let bus = Int(words[1]), let address = Int(words[2]) else {
            throw Failure(description: "unexpected reply: \(reply)")
        }
        return Device(bus: bus, address: address, port: String(words[3]))
    }

    static func plug(_ spec: String, port: String? = nil, silent: Bool = false) throws -> Device {
        try device(fromReply: ctl(["plug", spec] + (port.map { ["--port", $0] } ?? []) + (silent ? ["--silent"] : [])))
    }

    static func unplug(_ device: Device, silent: Bool = false) throws {
        try ctl(["unplug", device.id] + (silent ? ["--silent"] : []))
    }

    static func replug(_ device: Device, silent: Bool = false) throws -> Device {
        try self.device(fromReply: ctl(["replug", device.id] + (silent ? ["--silent"] : [])))
    }

    static func storm(_ device: Device, cycles: Int) throws -> Device {
        try self.device(fromReply: ctl("storm", device.id, String(cycles)))
    }

    static func list() throws -> [Listing] {
        try ctl("list").split(separator: "\n").compactMap { line in
            let w = line.split(separator: " ", omittingEmptySubsequences: true)
            guard w.count >= 4, let bus = Int(w[0]), let address = Int(w[1]) else { return nil }
            return Listing(
                device: Device(bus: bus, address: address, port: String(w[2])), vendorProduct: String(w[3]),
                serial: w.count > 4 ? String(w[4]) : nil)
        }
    }
}
