import AccessoryCore
/// What one line of a trace holds.
enum TraceLine {
    case blank
    case header(TraceHeader)
    case event(t: Double, HotplugEvent)
}

/// A line that is valid JSON but breaks the trace format (a missing field, a wrong type).
struct TraceFormatViolation: Error {
    var reason: String
}

/// Decodes one trace line straight from its bytes into a ``HotplugEvent``, with no
/// intermediate ``JSONValue`` tree: known keys are matched as bytes, their values parsed
/// into typed fields, unknown keys validated and skipped.
///
/// Syntax errors throw ``JSONLineError`` as soon as they are found. A format violation is
/// remembered and thrown only once the whole line has proved to be valid JSON, so a line cut
/// short is always reported as a syntax error.
struct TraceLineDecoder {
    private var cursor: JSONCursor
    private var problem: String?
    /// The index in `devices` of the device object being decoded, for messages.
    private var deviceIndex: Int?
    /// The reader's table of repeated strings, lent for the line.
    private var strings = StringTable.empty

    private init(_ bytes: UnsafeRawBufferPointer) {
        cursor = JSONCursor(bytes)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> TraceLine {
        var strings = StringTable.empty
        return try decode(bytes, strings: &strings)
    }

    /// Decodes a line, sharing repeated strings through `strings`.
    static func decode(_ bytes: UnsafeRawBufferPointer, strings: inout StringTable) throws -> TraceLine {
        var d = TraceLineDecoder(bytes)
        swap(&d.strings, &strings)
        defer { swap(&d.strings, &strings) }
        d.cursor.skipWhitespace()
        guard let first = d.cursor.peek() else { return .blank }
        guard first == UInt8(ascii: "{") else {
            try d.cursor.skipValue(depth: 0)
            try d.cursor.expectEnd()
            throw TraceFormatViolation(reason: "a trace line must be a JSON object, not \(Self.typeName(first))")
        }
        var fields = Fields()
        try d.decodeObject(into: &fields)
        try d.cursor.expectEnd()
        let line = d.build(&fields)
        if let problem = d.problem { throw TraceFormatViolation(reason: problem) }
        return line!
    }

    // MARK: Fields

    enum Field {
        case t, event, bus, address, port, vendor, product, serial, manufacturer, name, bcdDevice
        case protocols, devices, format, version, source, started

        /// Whether the field belongs to a device object (an `add`, or an entry of `devices`).
        var isDeviceField: Bool {
            switch self {
            case .t, .event, .devices, .format, .version, .source, .started: return false
            default: return true
            }
        }

        /// The member as ``TraceWriter`` begins it: the quoted key and its colon.
        @inline(__always)
        var member: StaticString {
            switch self {
            case .t: "\"t\":"
            case .event: "\"event\":"
            case .bus: "\"bus\":"
            case .address: "\"address\":"
            case .port: "\"port\":"
            case .vendor: "\"vendor\":"
            case .product: "\"product\":"
            case .serial: "\"serial\":"
            case .manufacturer: "\"manufacturer\":"
            case .name: "\"name\":"
            case .bcdDevice: "\"bcdDevice\":"
            case .protocols: "\"protocols\":"
            case .devices: "\"devices\":"
            case .format: "\"format\":"
            case .version: "\"version\":"
            case .source: "\"source\":"
            case .started: "\"started\":"
            }
        }

        /// The field ``TraceWriter`` writes after this one, if any: a line it wrote is read
        /// by matching each key against this guess before looking it up.
        @inline(__always)
        var next: Field? {
            switch self {
            case .t: .event
            case .event: .bus
            case .bus: .address
            case .address: .port
            case .port: .vendor
            case .vendor: .product
            case .product: .serial
            case .serial: .manufacturer
            case .manufacturer: .name
            case .name: .bcdDevice
            case .bcdDevice: .protocols
            case .format: .version
            case .version: .source
            case .source: .started
            case .protocols, .devices, .started: nil
            }
        }
    }

    enum EventKind {
        case add, remove, snapshot, sleep, wake, overflow
    }

    struct Fields {
        var t: Double?
        var event: EventKind?
        var bus: Int?
        var address: Int?
        var port: String?
        var vendor: UInt16?
        var product: UInt16?
        var bcdDevice: UInt16?
        var serial: String?
        var manufacturer: String?
        var name: String?
        var protocols: [String]?
        var devices: [AccessoryDescriptor]?
        var format: String?
        var version: Int?
        var source: String?
        var started: String?
    }

    @inline(__always)
    private static func equals(_ p: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard p.count == s.utf8CodeUnitCount else { return false }
        let q = s.utf8Start
        for i in 0..<p.count where p[i] != q[i] { return false }
        return true
    }

    private static func field(named p: UnsafeRawBufferPointer) -> Field? {
        switch p.count {
        case 1: return p[0] == UInt8(ascii: "t") ? .t : nil
        case 3: return equals(p, "bus") ? .bus : nil
        case 4: return equals(p, "port") ? .port : equals(p, "name") ? .name : nil
        case 5: return equals(p, "event") ? .event : nil
        case 6:
            if equals(p, "vendor") { return .vendor }
            if equals(p, "serial") { return .serial }
            if equals(p, "format") { return .format }
            return equals(p, "source") ? .source : nil
        case 7:
            if equals(p, "address") { return .address }
            if equals(p, "product") { return .product }
            if equals(p, "devices") { return .devices }
            if equals(p, "version") { return .version }
            return equals(p, "started") ? .started : nil
        case 9: return equals(p, "bcdDevice") ? .bcdDevice : equals(p, "protocols") ? .protocols : nil
        case 12: return equals(p, "manufacturer") ? .manufacturer : nil
        default: return nil
        }
    }

    private static func eventKind(named p: UnsafeRawBufferPointer) -> EventKind? {
        if equals(p, "add") { return .add }
        if equals(p, "remove") { return .remove }
        if equals(p, "snapshot") { return .snapshot }
        if equals(p, "sleep") { return .sleep }
        if equals(p, "wake") { return .wake }
        if equals(p, "overflow") { return .overflow }
        return nil
    }

    static func typeName(_ first: UInt8) -> String {
        switch first {
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean"
        case UInt8(ascii: "n"): return "null"
        default: return "a number"
        }
    }

    // MARK: Problems

    private mutating func report(_ message: String) {
        guard problem == nil else { return }
        problem = deviceIndex.map { "devices[\($0)]: \(message)" } ?? message
    }

    /// Reports a value of the wrong JSON type and skips it.
    private mutating func wrongType(_ name: String, _ expected: String) throws {
        let found = cursor.peek().map(Self.typeName) ?? "nothing"
        try cursor.skipValue(depth: 1)
        report("field '\(name)' must be \(expected), got \(found)")
    }

    // MARK: Objects

    /// Decodes an object at the cursor; inside `devices`, only device fields count.
    private mutating func decodeObject(into f: inout Fields) throws {
        cursor.index += 1
        cursor.skipWhitespace()
        if cursor.peek() == UInt8(ascii: "}") {
            cursor.index += 1
            return
        }
        var guess: Field? = deviceIndex == nil ? .t : .bus
        while true {
            cursor.skipWhitespace()
            guard cursor.peek() == UInt8(ascii: "\"") else { throw cursor.expected("a string key") }
            var field: Field?
            if let guess, cursor.skip(guess.member) {
                field = guess  // the writer's order: no key to scan and look up
            } else {
                let span = try cursor.scanString()
                if span.isPlainASCII {
                    field = Self.field(named: cursor.raw(span))
                } else {
                    var key = try cursor.decode(span)
                    field = key.withUTF8 { Self.field(named: UnsafeRawBufferPointer($0)) }
                }
                try cursor.expect(UInt8(ascii: ":"), "':' after key")
            }
            guess = field?.next
            cursor.skipWhitespace()
            if let field, deviceIndex == nil || field.isDeviceField {
                try decodeValue(of: field, into: &f)
            } else {
                try cursor.skipValue(depth: 1)
            }
            if try cursor.endOfMember(close: UInt8(ascii: "}"), "',' or '}' after object member") { return }
        }
    }

    private mutating func decodeValue(of field: Field, into f: inout Fields) throws {
        switch field {
        case .t:
            guard let b = cursor.peek(), b == UInt8(ascii: "-") || JSONCursor.isDigit(b) else {
                return try wrongType("t", "a number")
            }
            let start = cursor.index
            let t = try cursor.parseNumber().doubleValue!
            if !t.isFinite || t < 0 {
                report("field 't' must be a finite number of seconds, not negative, got \(text(from: start))")
            }
            f.t = t
        case .event:
            guard cursor.peek() == UInt8(ascii: "\"") else { return try wrongType("event", "a string") }
            let span = try cursor.scanString()
            if span.isPlainASCII {
                f.event = Self.eventKind(named: cursor.raw(span))
            } else {
                var name = try cursor.decode(span)
                f.event = name.withUTF8 { Self.eventKind(named: UnsafeRawBufferPointer($0)) }
            }
            if f.event == nil {
                let name = try cursor.decode(span)
                report("unknown event \"\(name)\"")
            }
        case .bus: f.bus = try integer("bus", 1...255)
        case .address: f.address = try integer("address", 1...127)
        case .version: f.version = try integer("version", Int.min...Int.max)
        case .port:
            f.port = try string("port")
            if f.port?.isEmpty == true { report("field 'port' must not be empty") }
        case .vendor: f.vendor = try hex4("vendor")
        case .product: f.product = try hex4("product")
        case .bcdDevice: f.bcdDevice = try hex4("bcdDevice")
        case .serial: f.serial = try string("serial")
        case .manufacturer: f.manufacturer = try string("manufacturer")
        case .name: f.name = try string("name")
        case .format: f.format = try string("format")
        case .source: f.source = try string("source")
        case .started: f.started = try string("started")
        case .protocols: f.protocols = try protocols()
        case .devices: f.devices = try devices()
        }
    }

    private func text(from start: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: cursor.bytes[start..<cursor.index]), as: UTF8.self)
    }

    private mutating func integer(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let b = cursor.peek(), b == UInt8(ascii: "-") || JSONCursor.isDigit(b) else {
            try wrongType(name, "an integer")
            return nil
        }
        let start = cursor.index
        if case .int(let i) = try cursor.parseNumber(), range.contains(i) { return i }
        if range == Int.min...Int.max {
            report("field '\(name)' must be an integer, got \(text(from: start))")
        } else {
            report("field '\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound), got \(text(from: start))")
        }
        return nil
    }

    private mutating func string(_ name: String) throws -> String? {
        guard cursor.peek() == UInt8(ascii: "\"") else {
            try wrongType(name, "a string")
            return nil
        }
        let span = try cursor.scanString()
        return span.isPlainASCII ? strings.string(cursor.raw(span)) : try cursor.decode(span)
    }

    private mutating func hex4(_ name: String) throws -> UInt16? {
        guard cursor.peek() == UInt8(ascii: "\"") else {
            try wrongType(name, "a string of 4 hexadecimal digits")
            return nil
        }
        let span = try cursor.scanString()
        if span.isPlainASCII && span.count == 4 {
            let p = cursor.raw(span)
            if let a = JSONCursor.hexDigit(p[0]), let b = JSONCursor.hexDigit(p[1]),
                let c = JSONCursor.hexDigit(p[2]), let d = JSONCursor.hexDigit(p[3])
            {
                return UInt16(a) << 12 | UInt16(b) << 8 | UInt16(c) << 4 | UInt16(d)
            }
        }
        let found = try cursor.decode(span)
        report("field '\(name)' must be 4 hexadecimal digits, got \"\(found)\"")
        return nil
    }

    private mutating func protocols() throws -> [String]? {
        try array("protocols", of: "an array of strings", opening: UInt8(ascii: "\"")) { decoder, result in
            result.append(try decoder.cursor.parseString())
        }
    }

    private mutating func devices() throws -> [AccessoryDescriptor]? {
        try array("devices", of: "an array of device objects", opening: UInt8(ascii: "{")) { decoder, result in
            decoder.deviceIndex = result.count
            var f = Fields()
            try decoder.decodeObject(into: &f)
            if let d = decoder.descriptor(&f, in: nil) { result.append(d) }
            decoder.deviceIndex = nil
        }
    }

    /// Decodes the JSON array value of field `name`, whose elements start with `opening`;
    /// `element` decodes one element at the cursor and appends what it yields.
    private mutating func array<Element>(
        _ name: String, of expected: String, opening: UInt8,
        element: (inout Self, inout [Element]) throws -> Void
    ) throws -> [Element]? {
        guard cursor.peek() == UInt8(ascii: "[") else {
            try wrongType(name, expected)
            return nil
        }
        cursor.index += 1
        var result: [Element] = []
        cursor.skipWhitespace()
        if cursor.peek() == UInt8(ascii: "]") {
            cursor.index += 1
            return result
        }
        while true {
            cursor.skipWhitespace()
            if cursor.peek() == opening {
                try element(&self, &result)
            } else {
                try wrongType(name, expected)
            }
            if try cursor.endOfMember(close: UInt8(ascii: "]"), "',' or ']' after array element") { return result }
        }
    }

    // MARK: Building

    /// Builds the device the fields describe, moving its strings out of `f` (no copies:
    /// this runs for every device of every line).
    private mutating func descriptor(_ f: inout Fields, in event: String?) -> AccessoryDescriptor? {
        // Only a missing field builds the message: this runs for every device of every line.
        func suffix() -> String { event.map { " in \($0) event" } ?? "" }
        guard let bus = f.bus else {
            report("missing required field 'bus'\(suffix())")
            return nil
        }
        guard let port = f.port.take() else {
            report("missing required field 'port'\(suffix())")
            return nil
        }
        return AccessoryDescriptor(
            bus: bus, address: f.address, port: port, vendor: f.vendor, product: f.product,
            bcdDevice: f.bcdDevice, serial: f.serial.take(), manufacturer: f.manufacturer.take(), name: f.name.take(),
            protocols: f.protocols.take())
    }

    /// The line the fields describe, or `nil` after reporting what is missing.
    /// The fields' strings and arrays are moved out of `f` into the line.
    private mutating func build(_ f: inout Fields) -> TraceLine? {
        guard let kind = f.event else {
            if problem != nil { return nil }
            guard f.format != nil || f.version != nil else {
                report("missing required field 'event'")
                return nil
            }
            guard let format = f.format else {
                report("header lacks 'format'")
                return nil
            }
            guard format == TraceHeader.format else {
                report("not an accessory trace: format is \"\(format)\", expected \"\(TraceHeader.format)\"")
                return nil
            }
            guard let version = f.version else {
                report("header lacks 'version'")
                return nil
            }
            guard version == TraceHeader.currentVersion else {
                report("unsupported trace version \(version) (this reader knows version \(TraceHeader.currentVersion))")
                return nil
            }
            return .header(TraceHeader(version: version, source: f.source, started: f.started))
        }
        guard let t = f.t else {
            report("missing required field 't'")
            return nil
        }
        switch kind {
        case .add:
            guard let d = descriptor(&f, in: "add") else { return nil }
            return .event(t: t, .added(d))
        case .remove:
            guard let bus = f.bus else {
                report("missing required field 'bus' in remove event")
                return nil
            }
            guard f.address != nil || f.port != nil else {
                report("remove event needs 'address' or 'port'")
                return nil
            }
            return .event(t: t, .removed(DeviceRemoval(bus: bus, address: f.address, port: f.port.take())))
        case .snapshot:
            guard let devices = f.devices.take() else {
                report("missing required field 'devices' in snapshot event")
                return nil
            }
            return .event(t: t, .snapshot(devices))
        case .sleep: return .event(t: t, .sleep)
        case .wake: return .event(t: t, .wake)
        case .overflow: return .event(t: t, .overflow)
        }
    }
}
