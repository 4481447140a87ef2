import AccessoryCapture
import Foundation
import Testing

/// Wireshark's `tshark`, the reference the capture tests compare with: its own dissection of a
/// usbmon capture, counted as `accessoryctl capture summary` counts.
public enum Tshark {
    /// The `tshark` on `PATH` (or at `$TSHARK`), if there is one.
    public static let path: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["TSHARK"], FileManager.default.isExecutableFile(atPath: path) { return path }
        let folders = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") + ["/usr/bin"]
        return folders.map { "\($0)/tshark" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// One endpoint of one device: bus, address, endpoint address and transfer kind.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        public var bus: Int
        public var address: Int
        public var endpoint: Int
        public var kind: String

        public init(bus: Int, address: Int, endpoint: Int, kind: String) {
            self.bus = bus
            self.address = address
            self.endpoint = endpoint
            self.kind = kind
        }

        public var description: String { "\(bus):\(address) 0x\(String(endpoint, radix: 16)) \(kind)" }
    }

    /// What one endpoint moved: completions with status 0 and the sum of their `usb.urb_len`
    /// (usbmon's `length`: the actual length).
    public struct Counts: Hashable, Sendable, CustomStringConvertible {
        public var completed: Int
        public var bytes: Int

        public init(completed: Int, bytes: Int) {
            self.completed = completed
            self.bytes = bytes
        }

        public var description: String { "\(completed) completed, \(bytes) bytes" }
    }

    /// tshark's dissection of `file`, counted per endpoint: every endpoint with any record, its
    /// completions (`C`) with status 0 and the sum of their `usb.urb_len`; and, beside it,
    /// the sum of their `usb.data_len` (the bytes captured), which equals it for IN endpoints.
    public static func summary(of file: String) throws -> (counts: [Endpoint: Counts], capturedBytes: [Endpoint: Int]) {
        let fields = ["usb.bus_id", "usb.device_address", "usb.endpoint_address", "usb.transfer_type", "usb.urb_type", "usb.urb_status", "usb.urb_len", "usb.data_len"]
        let output = try run(["-r", file, "-T", "fields"] + fields.flatMap { ["-e", $0] })
        let kinds = ["0x00": "isochronous", "0x01": "interrupt", "0x02": "control", "0x03": "bulk"]
        var counts: [Endpoint: Counts] = [:]
        var captured: [Endpoint: Int] = [:]
        for line in output.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == fields.count, let bus = Int(f[0]), let address = Int(f[1]), let endpoint = Int(f[2].dropFirst(2), radix: 16),
                let kind = kinds[f[3]], let status = Int(f[5]), let length = Int(f[6]), let dataLength = Int(f[7])
            else { throw TsharkError(message: "unexpected tshark line: \(line)") }
            let key = Endpoint(bus: bus, address: address, endpoint: endpoint, kind: kind)
            var c = counts[key] ?? Counts(completed: 0, bytes: 0)
            if f[4] == "'C'" && status == 0 {
                c.completed += 1
                c.bytes += length
                captured[key, default: 0] += dataLength
            }
            counts[key] = c
        }
        return (counts, captured)
    }

    /// `capture summary --json` output in the same form as ``summary(of:)``.
    public static func counts(fromSummaryJSON json: String) throws -> [Endpoint: Counts] {
        guard let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let devices = object["devices"] as? [[String: Any]]
        else { throw TsharkError(message: "not a summary object: \(json.prefix(200))") }
        var counts: [Endpoint: Counts] = [:]
        for device in devices {
            guard let bus = device["bus"] as? Int, let address = device["address"] as? Int,
                let endpoints = device["endpoints"] as? [[String: Any]]
            else { throw TsharkError(message: "a device without bus, address or endpoints") }
            for e in endpoints {
                guard let name = e["endpoint"] as? String, let endpoint = Int(name.dropFirst(2), radix: 16),
                    let kind = e["kind"] as? String, let completed = e["completed"] as? Int, let bytes = e["bytes"] as? Int
                else { throw TsharkError(message: "an endpoint with a missing field: \(e)") }
                counts[Endpoint(bus: bus, address: address, endpoint: endpoint, kind: kind)] = Counts(completed: completed, bytes: bytes)
            }
        }
        return counts
    }

    /// `tshark -r file -V`: every packet, dissected in full.
    public static func verbose(_ file: String) throws -> String {
        try run(["-r", file, "-V"])
    }

    /// Runs tshark with `arguments` and returns its standard output (its standard error, where
    /// it warns about running as root, is dropped).
    public static func run(_ arguments: [String]) throws -> String {
        guard let path else { throw TsharkError(message: "tshark is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TsharkError(message: "tshark \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    public struct TsharkError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test where `tshark` is not installed (scripts/setup installs it), saying so.
    public static var needsTshark: Self {
        .enabled(if: Tshark.path != nil, "needs tshark (Debian package tshark; scripts/setup installs it)")
    }
}

extension Tshark {
    /// The package's own summary in the form of ``summary(of:)``.
    package static func counts(of summary: USBCaptureSummary) -> [Endpoint: Counts] {
        var counts: [Endpoint: Counts] = [:]
        for entry in summary.devices {
            for e in entry.endpoints {
                let key = Endpoint(bus: entry.device.bus, address: entry.device.address, endpoint: Int(e.address), kind: e.kind.name)
                counts[key] = Counts(completed: e.completed, bytes: e.bytes)
            }
        }
        return counts
    }
}
