import AccessoryKit
import FoundationEssentials

/// The USB devices of a `umockdev-record` file, as much of each as a replay needs: bus,
/// address, IDs, the binary `descriptors` attribute and the strings.
///
/// The file is blocks of lines, one block per sysfs device, each opened by `P: /devices/…`:
/// `A: name=value` attributes (with `\n` and `\\` escaped), `H: name=HEX` binary ones, `E:`
/// udev properties, `N:` and `L:` the device node and links. Only blocks with a `descriptors`
/// attribute (USB devices, root hubs included) are kept.
struct UmockdevRecording: Sendable {
    /// One USB device of the recording.
    struct Device: Sendable {
        /// Its sysfs path, as the `P:` line has it.
        var path: String
        var bus: Int?
        var address: Int?
        var vendor: UInt16?
        var product: UInt16?
        /// The binary `descriptors` attribute: the device descriptor, then each configuration.
        var descriptors: [UInt8]
        var manufacturer: String?
        var productName: String?
        var serial: String?
    }

    let path: String
    let devices: [Device]

    /// Reads the recording at `path`.
    ///
    /// - Throws: `AccessoryError` `.notFound` when the file cannot be read, `.invalidArgument`
    ///   naming the file and line of a malformed `H:` attribute.
    init(path: String) throws(AccessoryError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AccessoryError(.notFound, "cannot read the umockdev recording \(path)", operation: "replay")
        }
        self.path = path
        var devices: [Device] = []
        var current: Device?
        var attributes: [String: String] = [:]
        func finish() {
            if var d = current, !d.descriptors.isEmpty {
                d.bus = attributes["busnum"].flatMap { Int($0) }
                d.address = attributes["devnum"].flatMap { Int($0) }
                // The IDs: the attributes, or else the device descriptor's idVendor and idProduct.
                let word = { (i: Int) in d.descriptors.count > i + 1 ? UInt16(d.descriptors[i]) | UInt16(d.descriptors[i + 1]) << 8 : nil }
                d.vendor = attributes["idVendor"].flatMap { UInt16($0, radix: 16) } ?? word(8)
                d.product = attributes["idProduct"].flatMap { UInt16($0, radix: 16) } ?? word(10)
                d.manufacturer = attributes["manufacturer"]
                d.productName = attributes["product"]
                d.serial = attributes["serial"]
                devices.append(d)
            }
            current = nil
            attributes = [:]
        }
        let text = String(decoding: data, as: UTF8.self)
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard line.count >= 3, line.dropFirst().hasPrefix(": ") else { continue }
            let body = line.dropFirst(3)
            switch line.first {
            case "P":
                finish()
                current = Device(path: String(body), descriptors: [])
            case "A":
                guard current != nil, let eq = body.firstIndex(of: "=") else { continue }
                attributes[String(body[..<eq])] = Self.unescape(body[body.index(after: eq)...])
            case "H":
                guard current != nil, let eq = body.firstIndex(of: "=") else { continue }
                guard body[..<eq] == "descriptors" else { continue }
                guard let bytes = Self.hex(body[body.index(after: eq)...]) else {
                    throw AccessoryError(
                        .invalidArgument, "\(path):\(number + 1): the descriptors attribute is not hexadecimal bytes", operation: "replay")
                }
                current?.descriptors = bytes
            default:
                continue
            }
        }
        finish()
        self.devices = devices
    }

    /// The device the capture means. When the capture knows its vendor and product, one with
    /// those IDs (the one at `bus` and `address` if several have them), never a device with
    /// other IDs that happens to have its address (numbers are reused across recordings);
    /// otherwise the device at `bus` and `address`.
    func device(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) -> Device? {
        let here = { (d: Device) in d.bus == bus && d.address == address }
        guard let vendor, let product else { return devices.first(where: here) }
        let same = devices.filter { $0.vendor == vendor && $0.product == product }
        return same.first(where: here) ?? same.first
    }

    /// An `A:` value with umockdev's escapes undone and its trailing newline removed.
    static func unescape(_ value: Substring) -> String {
        var out = ""
        var escaped = false
        for c in value {
            if escaped {
                out.append(c == "n" ? "\n" : c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        while out.hasSuffix("\n") { out.removeLast() }
        return out
    }

    /// Bytes from an even number of hexadecimal digits, `nil` otherwise.
    static func hex(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        func value(_ d: UInt8) -> UInt8? {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return bytes
    }
}
