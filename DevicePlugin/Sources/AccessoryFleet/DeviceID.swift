import AccessoryCore

/// The ID a device plugin gives an accessory: its physical identity, so the same accessory
/// keeps its ID across re-plugs, re-enumerations and restarts.
///
/// - `VVVV-PPPP-SERIAL` for an accessory with a serial (`1209-0001-SN1`);
/// - `VVVV-PPPP-SERIAL-port-PORT` for the second of two connected accessories that share a
///   serial (cloned serials): its port tells it apart (`1209-0001-SN1-port-1-1.4`);
/// - `VVVV-PPPP-port-PORT` for one without a serial (`1209-0001-port-2-3`).
///
/// Bytes other than ASCII letters, digits, `.`, `_` and `-` are written `%XX`, so a serial
/// with spaces or slashes still makes one ID, and two serials never make the same one. An ID
/// longer than the kubelet's 63 characters keeps its first 46 and ends in a hash of the
/// whole.
public enum DeviceID {
    public static func of(_ accessory: Accessory) -> String {
        make(accessory.physicalIdentity)
    }

    /// The kubelet's limit on a device ID's length.
    public static let maxLength = 63

    public static func make(_ identity: PhysicalIdentity) -> String {
        let id = spelled(identity)
        guard id.utf8.count > maxLength else { return id }
        // Too long (a long serial): its start, then a hash of the whole, so it stays stable
        // and distinct.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for b in id.utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        let digits = String(hash, radix: 16)
        let hex = String(repeating: "0", count: 16 - digits.count) + digits
        return String(id.utf8.prefix(maxLength - 17))! + "-" + hex
    }

    private static func spelled(_ identity: PhysicalIdentity) -> String {
        switch identity {
        case .serialNumber(let vendor, let product, let serial):
            return "\(hex(vendor))-\(hex(product))-\(escaped(serial))"
        case .clonedSerial(let vendor, let product, let serial, _, let port):
            return "\(hex(vendor))-\(hex(product))-\(escaped(serial))-port-\(escaped(port))"
        case .port(_, let port, let vendor, let product):
            return "\(hex(vendor))-\(hex(product))-port-\(escaped(port))"
        }
    }

    /// Four lowercase hexadecimal digits, or `xxxx` when unknown.
    private static func hex(_ value: UInt16?) -> String {
        guard let value else { return "xxxx" }
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    static func escaped(_ text: String) -> String {
        var out: [UInt8] = []
        let digits = Array("0123456789ABCDEF".utf8)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), digits[Int(b >> 4)], digits[Int(b & 0xf)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
