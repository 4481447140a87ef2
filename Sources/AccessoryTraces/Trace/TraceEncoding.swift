import AccessoryCore
/// Encodes trace lines (header and events) as bytes, for ``TraceWriter``.
enum TraceEncoding {
    static func appendHeader(_ header: TraceHeader, to out: inout some ByteOutput) {
        JSONBytes.appendRaw("{\"format\":", to: &out)
        JSONBytes.appendString(TraceHeader.format, to: &out)
        JSONBytes.appendRaw(",\"version\":", to: &out)
        JSONBytes.appendInt(header.version, to: &out)
        if let source = header.source {
            JSONBytes.appendRaw(",\"source\":", to: &out)
            JSONBytes.appendString(source, to: &out)
        }
        if let started = header.started {
            JSONBytes.appendRaw(",\"started\":", to: &out)
            JSONBytes.appendString(started, to: &out)
        }
        JSONBytes.appendRaw("}\n", to: &out)
    }

    /// Appends one event line, newline included.
    static func appendEvent(t: Double, _ event: HotplugEvent, to out: inout some ByteOutput) {
        JSONBytes.appendRaw("{\"t\":", to: &out)
        JSONBytes.appendSeconds(t, to: &out)
        switch event {
        case .added(let d):
            JSONBytes.appendRaw(",\"event\":\"add\",", to: &out)
            appendDeviceFields(d, to: &out)
        case .removed(let r):
            JSONBytes.appendRaw(",\"event\":\"remove\",\"bus\":", to: &out)
            JSONBytes.appendInt(r.bus, to: &out)
            if let address = r.address {
                JSONBytes.appendRaw(",\"address\":", to: &out)
                JSONBytes.appendInt(address, to: &out)
            }
            if let port = r.port {
                JSONBytes.appendRaw(",\"port\":", to: &out)
                JSONBytes.appendString(port, to: &out)
            }
        case .snapshot(let devices):
            JSONBytes.appendRaw(",\"event\":\"snapshot\",\"devices\":[", to: &out)
            for (i, d) in devices.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "{"))
                appendDeviceFields(d, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        case .sleep: JSONBytes.appendRaw(",\"event\":\"sleep\"", to: &out)
        case .wake: JSONBytes.appendRaw(",\"event\":\"wake\"", to: &out)
        case .overflow: JSONBytes.appendRaw(",\"event\":\"overflow\"", to: &out)
        }
        JSONBytes.appendRaw("}\n", to: &out)
    }

    /// `"bus":…` through `"protocols":[…]`, leaving out what is unknown; no braces.
    /// The device fields in the contract's order; `details: false` stops after `serial`
    /// (the replay output's notification lines).
    static func appendDeviceFields(_ d: AccessoryDescriptor, details: Bool = true, to out: inout some ByteOutput) {
        JSONBytes.appendRaw("\"bus\":", to: &out)
        JSONBytes.appendInt(d.bus, to: &out)
        if let address = d.address {
            JSONBytes.appendRaw(",\"address\":", to: &out)
            JSONBytes.appendInt(address, to: &out)
        }
        JSONBytes.appendRaw(",\"port\":", to: &out)
        JSONBytes.appendString(d.port, to: &out)
        if let vendor = d.vendor {
            JSONBytes.appendRaw(",\"vendor\":", to: &out)
            JSONBytes.appendHex4(vendor, to: &out)
        }
        if let product = d.product {
            JSONBytes.appendRaw(",\"product\":", to: &out)
            JSONBytes.appendHex4(product, to: &out)
        }
        if let serial = d.serial {
            JSONBytes.appendRaw(",\"serial\":", to: &out)
            JSONBytes.appendString(serial, to: &out)
        }
        guard details else { return }
        if let manufacturer = d.manufacturer {
            JSONBytes.appendRaw(",\"manufacturer\":", to: &out)
            JSONBytes.appendString(manufacturer, to: &out)
        }
        if let name = d.name {
            JSONBytes.appendRaw(",\"name\":", to: &out)
            JSONBytes.appendString(name, to: &out)
        }
        if let bcd = d.bcdDevice {
            JSONBytes.appendRaw(",\"bcdDevice\":", to: &out)
            JSONBytes.appendHex4(bcd, to: &out)
        }
        if let protocols = d.protocols {
            JSONBytes.appendRaw(",\"protocols\":[", to: &out)
            for (i, p) in protocols.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONBytes.appendString(p, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}
