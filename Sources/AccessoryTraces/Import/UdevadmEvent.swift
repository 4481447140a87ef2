import AccessoryCore
import Glibc

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
    var properties = UdevadmProperties()
    /// The line of the header in the log.
    var line: Int

    /// Parses a header such as `KERNEL[100908.331118] remove   /devices/…/3-12.4.3 (usb)`.
    init?(header text: Substring, line: Int) {
        guard let event = Array(text.utf8).withUnsafeBytes({ Self(header: $0, line: line) }) else { return nil }
        self = event
    }

    /// Parses a header line given as bytes, without its newline or surrounding blanks.
    init?(header bytes: UnsafeRawBufferPointer, line: Int) {
        guard let header = Header(bytes) else { return nil }
        self.init(header, bytes, line: line)
    }

    /// The event of a parsed header; `bytes` is the line it was parsed from.
    init(_ header: Header, _ bytes: UnsafeRawBufferPointer, line: Int) {
        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        self.source = header.source
        self.micros = header.micros
        self.action = text(header.action)
        self.devpath = text(header.path)
        self.subsystem = text(header.subsystem)
        self.line = line
    }

    /// A header line's fields, as byte ranges of the line.
    struct Header {
        var source: Source
        var micros: Int64
        var action: Range<Int>
        var path: Range<Int>
        /// Without its parentheses.
        var subsystem: Range<Int>
        /// Whether the event can become a record: an `add` or `remove` in the `usb`
        /// subsystem whose path ends in a port chain. (A `DEVTYPE` other than `usb_device`
        /// can still rule it out.)
        var mayBeUSBDevice: Bool

        init?(_ bytes: UnsafeRawBufferPointer) {
            func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
            func has(_ text: StaticString, at range: Range<Int>) -> Bool {
                range.count == text.utf8CodeUnitCount
                    && memcmp(bytes.baseAddress! + range.lowerBound, text.utf8Start, range.count) == 0
            }
            var i: Int
            if has("KERNEL", at: 0..<min(6, bytes.count)) {
                source = .kernel
                i = 6
            } else if has("UDEV", at: 0..<min(4, bytes.count)) {
                source = .udev
                i = 4
            } else {
                return nil
            }
            while i < bytes.count && isBlank(bytes[i]) { i += 1 }
            guard i < bytes.count, bytes[i] == UInt8(ascii: "["),
                let close = bytes[(i + 1)...].firstIndex(of: UInt8(ascii: "]")),
                let micros = UdevadmEvent.micros(UnsafeRawBufferPointer(rebasing: bytes[(i + 1)..<close]))
            else { return nil }
            // Three blank-separated fields: the action, the path and "(subsystem)".
            i = close + 1
            func field() -> Range<Int>? {
                while i < bytes.count && isBlank(bytes[i]) { i += 1 }
                guard i < bytes.count else { return nil }
                let start = i
                while i < bytes.count && !isBlank(bytes[i]) { i += 1 }
                return start..<i
            }
            guard let action = field(), let path = field(), let subsystem = field(), field() == nil,
                bytes[path.lowerBound] == UInt8(ascii: "/"), subsystem.count > 2,
                bytes[subsystem.lowerBound] == UInt8(ascii: "("), bytes[subsystem.upperBound - 1] == UInt8(ascii: ")")
            else { return nil }
            self.micros = micros
            self.action = action
            self.path = path
            self.subsystem = (subsystem.lowerBound + 1)..<(subsystem.upperBound - 1)
            var last = path
            while last.count > 1 && bytes[last.upperBound - 1] == UInt8(ascii: "/") { last = last.dropLast() }
            if let slash = bytes[last].lastIndex(of: UInt8(ascii: "/")) { last = (slash + 1)..<last.upperBound }
            mayBeUSBDevice = (has("add", at: action) || has("remove", at: action)) && has("usb", at: self.subsystem)
                && PortChain.isValid(UnsafeRawBufferPointer(rebasing: bytes[last]))
        }
    }

    /// `100908.331118` as microseconds.
    static func micros(_ text: Substring) -> Int64? {
        Array(text.utf8).withUnsafeBytes { micros($0) }
    }

    /// `100908.331118`, as bytes, as microseconds: up to 12 digits of seconds and up to 6
    /// of the fraction are read (more are allowed and ignored). Leading spaces are skipped.
    static func micros(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        var i = 0
        while i < bytes.count && bytes[i] == 0x20 { i += 1 }
        var seconds: Int64 = 0
        let wholeStart = i
        while i < bytes.count && isDigit(bytes[i]) {
            seconds = seconds * 10 + Int64(bytes[i] - 0x30)
            i += 1
            guard i - wholeStart <= 12 else { return nil }
        }
        guard i > wholeStart else { return nil }
        var fraction: Int64 = 0
        if i < bytes.count {
            guard bytes[i] == UInt8(ascii: "."), i + 1 < bytes.count else { return nil }
            i += 1
            var scale: Int64 = 100_000
            while i < bytes.count {
                guard isDigit(bytes[i]) else { return nil }
                fraction += Int64(bytes[i] - 0x30) * scale
                scale /= 10
                i += 1
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
        guard subsystem == "usb", PortChain.isValid(lastSegment.utf8) else { return false }
        if let devtype = properties[.devtype] { return devtype == "usb_device" }
        return true
    }

    /// Copies in the properties this copy of the event lacks.
    mutating func absorb(_ other: UdevadmEvent) {
        properties.merge(other.properties)
    }

    // MARK: What the event says about the device

    /// Bus and address from `BUSNUM`/`DEVNUM` or `DEVNAME` (`/dev/bus/usb/003/019`); the bus
    /// from the path (`usb3`, or the port chain's leading number) otherwise.
    var busAndAddress: (bus: Int, address: Int?) {
        var bus = properties[.busnum].flatMap { Int($0) }
        var address = properties[.devnum].flatMap { Int($0) }
        if bus == nil || address == nil, let devname = properties[.devname], let r = devname.firstRange(of: "bus/usb/") {
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
        return PortChain.bus(inName: String(lastSegment)) ?? 0
    }

    /// `PRODUCT=403/6001/600`: VID, PID and bcdDevice in unpadded hexadecimal.
    /// Field `k` must have 1 to 4 hexadecimal digits, and there must be exactly three fields.
    private func productField(_ k: Int) -> UInt16? {
        guard let product = properties[.product] else { return nil }
        var field = 0
        var digits = 0
        var value: UInt16 = 0
        var result: UInt16?
        for b in product.utf8 {
            if b == UInt8(ascii: "/") {
                if field == k { result = digits > 0 && digits <= 4 ? value : nil }
                field += 1
                digits = 0
                value = 0
                continue
            }
            digits += 1
            guard field == k else { continue }
            guard digits <= 4, let d = JSONCursor.hexDigit(b) else {
                result = nil
                digits = 5  // too long or not hexadecimal: the field is unusable
                continue
            }
            value = value << 4 | UInt16(d)
        }
        if field == k { result = digits > 0 && digits <= 4 ? value : nil }
        return field == 2 ? result : nil
    }

    private func hex4(_ key: UdevadmProperties.Key) -> UInt16? {
        properties[key].flatMap(Hex.parseFour)
    }

    var vendor: UInt16? { hex4(.vendorID) ?? productField(0) }
    var product: UInt16? { hex4(.modelID) ?? productField(1) }
    var bcdDevice: UInt16? { productField(2) ?? hex4(.revision) }

    var serial: String? {
        properties[.serialShort].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The manufacturer string. udev falls back to the VID when the device has none; that
    /// fallback is not a manufacturer and is left out.
    var manufacturer: String? {
        text(encoded: .vendorEncoded, plain: .vendor, fallback: vendor)
    }

    /// The product string, without udev's PID fallback.
    var name: String? {
        text(encoded: .modelEncoded, plain: .model, fallback: product)
    }

    private func text(encoded: UdevadmProperties.Key, plain: UdevadmProperties.Key, fallback: UInt16?) -> String? {
        guard let value = properties[encoded].map(Self.decodeEscapes) ?? properties[plain], !value.isEmpty else {
            return nil
        }
        if let fallback, value.utf8.count == 4, value.lowercased() == Hex.four(fallback) { return nil }
        return value
    }

    /// Resolves udev's `\xNN` escapes (`FT232R\x20USB\x20UART`).
    static func decodeEscapes(_ s: String) -> String {
        guard s.utf8.contains(UInt8(ascii: "\\")) else { return s }
        let bytes = Array(s.utf8)
        var out: [UInt8] = []
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
