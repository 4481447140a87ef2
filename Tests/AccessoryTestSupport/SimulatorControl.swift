import Foundation

/// The `accessory-sim` the hardware tests run under (scripts/test starts it), driven through
/// `accessory-sim ctl`: one client for every test target of the package.
public enum SimulatorControl {
    static let environment = ProcessInfo.processInfo.environment

    /// Whether the tests run under `accessory-sim` (it sets `ACCESSORY_SIM_SOCKET`).
    public static var isActive: Bool { environment["ACCESSORY_SIM_SOCKET"] != nil }

    /// Whether the tests run under a plain umockdev testbed, such as `umockdev-run -d DUMP`.
    public static var isUmockdevOnly: Bool { environment["UMOCKDEV_DIR"] != nil && !isActive }

    /// The simulator binary: `$ACCESSORY_SIM`, else the one beside the running test binary
    /// (the build's bin folder, whatever the scratch path), else `.build/debug/accessory-sim`.
    public static var binary: String {
        if let path = environment["ACCESSORY_SIM"], !path.isEmpty { return path }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let beside = exe.deletingLastPathComponent().appendingPathComponent("accessory-sim").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return SharedFolder.packageRoot.appendingPathComponent(".build/debug/accessory-sim").path
    }

    /// One device instance as the simulator reports it.
    public struct Device: Hashable, Sendable, CustomStringConvertible {
        public var bus: Int
        public var address: Int
        public var port: String
        /// `BUS:ADDRESS`, as `ctl` commands name a device.
        public var id: String { "\(bus):\(address)" }
        public var description: String { "\(bus):\(address)@\(port)" }

        public init(bus: Int, address: Int, port: String) {
            self.bus = bus
            self.address = address
            self.port = port
        }
    }

    /// One line of `ctl list`: `BUS ADDRESS PORT VID:PID [SERIAL]`.
    public struct Listing: Hashable, Sendable {
        public var device: Device
        public var vendorProduct: String
        public var serial: String?
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// Runs `accessory-sim ctl ARGS…` and returns the words of its reply; throws when it
    /// exits non-zero.
    @discardableResult
    public static func ctl(_ arguments: String...) throws -> [String] {
        try ctl(arguments)
    }

    @discardableResult
    public static func ctl(_ arguments: [String]) throws -> [String] {
        try output(arguments).split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// Runs `accessory-sim ctl ARGS…` and returns its output as it is; throws when it exits
    /// non-zero.
    public static func output(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["ctl"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "accessory-sim ctl \(arguments.joined(separator: " ")): exit \(process.terminationStatus): \(text)")
        }
        return text
    }

    /// The device of an `ok BUS ADDRESS PORT` reply.
    public static func device(fromReply words: [String]) throws -> Device {
        guard words.count >= 4, words[0] == "ok", let bus = Int(words[1]), let address = Int(words[2]) else {
            throw Failure(description: "unexpected reply: \(words.joined(separator: " "))")
        }
        return Device(bus: bus, address: address, port: words[3])
    }

    /// Plugs an accessory (`VID:PID:SERIAL[:PROTOCOL][,OPTION…]`), at `port` if given.
    @discardableResult
    public static func plug(_ spec: String, port: String? = nil, silent: Bool = false) throws -> Device {
        try device(fromReply: ctl(["plug", spec] + (port.map { ["--port", $0] } ?? []) + (silent ? ["--silent"] : [])))
    }

    /// Plugs a hub with `ports` ports at `port`.
    public static func plugHub(at port: String, ports: Int) throws -> Device {
        try device(fromReply: ctl("plug-hub", port, String(ports)))
    }

    /// Unplugs a device (`BUS:ADDRESS`); `options` are `unplug`'s, such as `--silent`.
    public static func unplug(_ id: String, _ options: String...) throws {
        try ctl(["unplug", id] + options)
    }

    public static func unplug(_ device: Device, silent: Bool = false) throws {
        try ctl(["unplug", device.id] + (silent ? ["--silent"] : []))
    }

    public static func replug(_ device: Device, silent: Bool = false) throws -> Device {
        try self.device(fromReply: ctl(["replug", device.id] + (silent ? ["--silent"] : [])))
    }

    /// Runs `cycles` unplug/plug cycles on `id`; returns the instance it ends as.
    public static func storm(_ id: String, cycles: Int) throws -> Device {
        try device(fromReply: ctl("storm", id, String(cycles)))
    }

    public static func list() throws -> [Listing] {
        try output(["list"]).split(separator: "\n").compactMap { line in
            let w = line.split(separator: " ", omittingEmptySubsequences: true)
            guard w.count >= 4, let bus = Int(w[0]), let address = Int(w[1]) else { return nil }
            return Listing(
                device: Device(bus: bus, address: address, port: String(w[2])), vendorProduct: String(w[3]),
                serial: w.count > 4 ? String(w[4]) : nil)
        }
    }

    /// Every device with this serial, in `ctl list`'s order.
    public static func devices(serial: String) throws -> [Device] {
        try list().filter { $0.serial == serial }.map(\.device)
    }

    /// The device with this serial; throws when there is none.
    public static func device(serial: String) throws -> Device {
        guard let device = try devices(serial: serial).first else {
            throw Failure(description: "no accessory \(serial) in the simulator: \(try output(["list"]))")
        }
        return device
    }

    /// The `ioctl-log` of a device (`BUS:ADDRESS`), as key=value pairs.
    public static func ioctlLog(_ id: String) throws -> [String: String] {
        var fields: [String: String] = [:]
        for word in try ctl("ioctl-log", id) {
            let parts = word.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    public static func ioctlLog(_ device: Device) throws -> [String: String] { try ioctlLog(device.id) }

    /// Waits until `condition` holds on the device's `ioctl-log`, up to `timeout`.
    public static func waitForLog(
        _ id: String, timeout: Duration = .seconds(10), _ condition: ([String: String]) -> Bool
    ) throws -> Bool {
        try pollUntil(timeout: timeout) { condition(try ioctlLog(id)) }
    }

    /// Whether the loopback `device` holds its OUT transfers because it is full (32 MiB
    /// unread): a write to it waits.
    public static func isBackPressured(_ device: Device) throws -> Bool {
        let log = try ioctlLog(device)
        return Int(log["pending-out"] ?? "") ?? 0 > 0 && Int(log["fifo"] ?? "") ?? 0 >= 32 << 20
    }
}
