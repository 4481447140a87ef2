/// One event as `udevadm monitor` prints it: a `KERNEL[…]` or `UDEV  […]` header line and,
/// with `--property` (or `--environment`), the `KEY=VALUE` lines under it.
struct UdevadmEvent: Sendable {
    enum Source: Sendable {
        case kernel, udev
    }

    var source: Source
    /// The monitor's timestamp (seconds since boot), in microseconds.
    var micros: Int64
    var action: String
    var devpath: String
    var subsystem: String
    var properties: [String: String] = [:]
    /// The line of the header in the log.
    var line: Int

    /// Parses a header such as `KERNEL[100908.331118] remove   /devices/…/3-12.4.3 (usb)`.
    init?(header text: Substring, line: Int) {
        var rest: Substring
        if text.hasPrefix("KERNEL") {
            source = .kernel
            rest = text.dropFirst(6)
        } else if text.hasPrefix("UDEV") {
            source = .udev
            rest = text.dropFirst(4)
        } else {
            return nil
        }
        rest = rest.drop { $0 == " " || $0 == "\t" }
        guard rest.first == "[", let close = rest.firstIndex(of: "]") else { return nil }
        guard let micros = Self.micros(rest[rest.index(after: rest.startIndex)..<close]) else { return nil }
        let fields = rest[rest.index(after: close)...].split { $0 == " " || $0 == "\t" }
        guard fields.count == 3, fields[1].hasPrefix("/"), fields[2].count > 2,
            fields[2].hasPrefix("("), fields[2].hasSuffix(")")
        else { return nil }
        self.micros = micros
        self.action = String(fields[0])
        self.devpath = String(fields[1])
        self.subsystem = String(fields[2].dropFirst().dropLast())
        self.line = line
    }

    /// `100908.331118` as microseconds.
    static func micros(_ text: Substring) -> Int64? {
        let text = text.drop { $0 == " " }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 12, whole.allSatisfy(\.isDigit),
            let seconds = Int64(whole)
        else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.allSatisfy(\.isDigit) else { return nil }
            for (k, c) in digits.prefix(6).enumerated() {
                fraction += Int64(c.asciiValue! - 0x30) * [100_000, 10_000, 1000, 100, 10, 1][k]
            }
        }
        return seconds * 1_000_000 + fraction
    }

    /// The last segment of the device path: the port chain of a USB device (`3-12.4.3`).
    var lastSegment: Substring {
        let slash = UInt8(ascii: "/")
        var path = Substring(devpath)
        while path.utf8.last == slash { path = path.dropLast() }
        guard let i = path.utf8.lastIndex(of: slash) else { return path }
        return path[path.utf8.index(after: i)...]
    }

    /// Whether this is a USB *device* (not a root hub, an interface or another subsystem).
    var isUSBDevice: Bool {
        guard subsystem == "usb", Self.isPortChain(lastSegment) else { return false }
        if let devtype = properties["DEVTYPE"] { return devtype == "usb_device" }
        return true
    }

    /// `^\d+-\d+(\.\d+)*$`, such as `1-1.4`.
    static func isPortChain(_ s: Substring) -> Bool {
        // digits, "-", then digit runs separated by single dots
        var sawDash = false
        var runLength = 0
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                runLength += 1
            case UInt8(ascii: "-") where !sawDash, UInt8(ascii: ".") where sawDash:
                guard runLength > 0 else { return false }
                sawDash = true
                runLength = 0
            default:
                return false
            }
        }
        return sawDash && runLength > 0
    }

    /// Copies in the properties this copy of the event lacks.
    mutating func absorb(_ other: UdevadmEvent) {
        properties.merge(other.properties) { mine, _ in mine }
    }

    // MARK: What the event says about the device

    /// Bus and address from `BUSNUM`/`DEVNUM` or `DEVNAME` (`/dev/bus/usb/003/019`); the bus
    /// from the path (`usb3`, or the port chain's leading number) otherwise.
    var busAndAddress: (bus: Int, address: Int?) {
        var bus = properties["BUSNUM"].flatMap { Int($0) }
        var address = properties["DEVNUM"].flatMap { Int($0) }
        if let devname = properties["DEVNAME"], let r = devname.range(of: "bus/usb/") {
            let parts = devname[r.upperBound...].split(separator: "/")
            if parts.count == 2 {
                bus = bus ?? Int(parts[0])
                address = address ?? Int(parts[1])
            }
        }
        if let b = bus, !(1...255).contains(b) { bus = nil }
        if let a = address, !(1...127).contains(a) { address = nil }
        return (bus ?? busFromPath, address)
    }

    private var busFromPath: Int {
        for segment in devpath.split(separator: "/") where segment.hasPrefix("usb") {
            if let n = Int(segment.dropFirst(3)), (1...255).contains(n) { return n }
        }
        return Int(lastSegment.prefix { $0 != "-" }) ?? 0
    }

    /// `PRODUCT=403/6001/600`: VID, PID and bcdDevice in unpadded hexadecimal.
    private func productField(_ k: Int) -> UInt16? {
        guard let product = properties["PRODUCT"] else { return nil }
        let parts = product.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, (1...4).contains(parts[k].count) else { return nil }
        return UInt16(parts[k], radix: 16)
    }

    private func hex4(_ key: String) -> UInt16? {
        properties[key].flatMap(Hex.parseFour)
    }

    var vendor: UInt16? { hex4("ID_VENDOR_ID") ?? productField(0) }
    var product: UInt16? { hex4("ID_MODEL_ID") ?? productField(1) }
    var bcdDevice: UInt16? { productField(2) ?? hex4("ID_REVISION") }

    var serial: String? {
        properties["ID_SERIAL_SHORT"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The manufacturer string. udev falls back to the VID when the device has none; that
    /// fallback is not a manufacturer and is left out.
    var manufacturer: String? {
        text(encoded: "ID_VENDOR_ENC", plain: "ID_VENDOR", fallback: vendor)
    }

    /// The product string, without udev's PID fallback.
    var name: String? {
        text(encoded: "ID_MODEL_ENC", plain: "ID_MODEL", fallback: product)
    }

    private func text(encoded: String, plain: String, fallback: UInt16?) -> String? {
        guard let value = properties[encoded].map(Self.decodeEscapes) ?? properties[plain], !value.isEmpty else {
            return nil
        }
        if let fallback, value.lowercased() == Hex.four(fallback) { return nil }
        return value
    }

    /// Resolves udev's `\xNN` escapes (`FT232R\x20USB\x20UART`).
    static func decodeEscapes(_ s: String) -> String {
        guard s.contains("\\x") else { return s }
        var out: [UInt8] = []
        let bytes = Array(s.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count, bytes[i + 1] == UInt8(ascii: "x"),
                let hi = JSONCursor.hexDigit(bytes[i + 2]), let lo = JSONCursor.hexDigit(bytes[i + 3])
            {
                out.append(hi << 4 | lo)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The trace event this monitor event stands for.
    var hotplugEvent: HotplugEvent {
        let (bus, address) = busAndAddress
        let port = String(lastSegment)
        if action == "remove" {
            return .removed(DeviceRemoval(bus: bus, address: address, port: port))
        }
        return .added(AccessoryDescriptor(
            bus: bus, address: address, port: port, vendor: vendor, product: product,
            bcdDevice: bcdDevice, serial: serial, manufacturer: manufacturer, name: name))
    }
}

extension Character {
    /// An ASCII digit, and nothing more: a digit with a combining mark after it ("5\u{301}")
    /// is one Character that compares between "0" and "9" but has no ASCII value.
    fileprivate var isDigit: Bool { asciiValue.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
}
