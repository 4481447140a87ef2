import AccessoryCore
/// The `accessoryctl list --json` form: one JSON array of objects with the trace format's
/// device fields plus `connectionID` (and `manufacturer`, `name`, `protocols` where known).
package enum AccessoryListJSON {
    /// The array, on one line, without a newline.
    package static func array(_ accessories: [Accessory]) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, a) in accessories.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            append(a, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// One entry of the array, as an object on its own.
    package static func object(_ accessory: Accessory) -> String {
        var out: [UInt8] = []
        append(accessory, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ a: Accessory, to out: inout [UInt8]) {
        JSONBytes.appendRaw("{\"connectionID\":", to: &out)
        JSONBytes.appendUInt(UInt(a.connectionID.rawValue), to: &out)
        out.append(UInt8(ascii: ","))
        TraceEncoding.appendDeviceFields(a.descriptor, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}
