import AccessoryCore

/// The ID a device plugin gives an accessory. An ID names one physical accessory and never
/// passes to another: it is a pure function of what tells the accessory apart from the others
/// present now, not of which came first, their addresses, or a restart.
///
/// - `VVVV-PPPP-SERIAL` (`1209-0001-SN1`) when no other present accessory of that VID:PID
///   has that serial;
/// - `VVVV-PPPP-SERIAL-port-PORT` (`1209-0001-SN1-port-1-1.4`) for *every* present
///   accessory of a serial that several share (clones), so no clone gets the serial alone;
/// - `VVVV-PPPP-port-PORT` (`1209-0001-port-2-3`) without a serial (`xxxx` for an unknown
///   VID or PID).
///
/// The spelling is injective. In a serial, bytes other than ASCII letters, digits, `.` and
/// `_` are written `%XX`, `-` included, so a serial never looks like a port; in a port, every
/// byte other than digits, `.` and `-`. An ID longer than the kubelet's 63 characters keeps
/// its first 46, then `%h` and 15 hex digits of a hash of the whole (no spelled-out ID
/// contains `%h`; only such long IDs can collide, through the hash).
public enum DeviceID {
    /// The kubelet's limit on a device ID's length.
    public static let maxLength = 63

    /// Each present accessory's ID. Accessories that would share one (only the hash of long
    /// IDs, or two on one port, can do that) get none.
    public static func assign(_ present: some Sequence<Accessory>) -> [String: Accessory] {
        let present = Array(present)
        var holders: [PhysicalIdentity: Int] = [:]
        for accessory in present { holders[accessory.descriptor.physicalIdentity, default: 0] += 1 }
        var ids: [String: Accessory] = [:]
        var contested: Set<String> = []
        for accessory in present {
            let d = accessory.descriptor
            var identity = d.physicalIdentity
            if holders[identity, default: 0] > 1, case .serialNumber(let vendor, let product, let serial) = identity {
                identity = .clonedSerial(vendor: vendor, product: product, serial: serial, bus: d.bus, port: d.port)
            }
            let id = make(identity)
            if ids.updateValue(accessory, forKey: id) != nil { contested.insert(id) }
        }
        for id in contested { ids[id] = nil }
        return ids
    }

    /// The ID of one identity.
    public static func make(_ identity: PhysicalIdentity) -> String {
        let id = spelled(identity)
        guard id.utf8.count > maxLength else { return id }
        // Too long (a long serial): its start, then a hash of the whole, so it stays stable
        // and distinct.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for b in id.utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        let digits = String(hash >> 4, radix: 16)
        let hex = String(repeating: "0", count: 15 - digits.count) + digits
        return String(decoding: id.utf8.prefix(maxLength - 17), as: UTF8.self) + "%h" + hex
    }

    private static func spelled(_ identity: PhysicalIdentity) -> String {
        switch identity {
        case .serialNumber(let vendor, let product, let serial):
            return "\(hex(vendor))-\(hex(product))-\(escaped(serial))"
        case .clonedSerial(let vendor, let product, let serial, _, let port):
            return "\(hex(vendor))-\(hex(product))-\(escaped(serial))-port-\(escaped(port: port))"
        case .port(_, let port, let vendor, let product):
            return "\(hex(vendor))-\(hex(product))-port-\(escaped(port: port))"
        }
    }

    /// Four lowercase hexadecimal digits, or `xxxx` when unknown.
    private static func hex(_ value: UInt16?) -> String {
        guard let value else { return "xxxx" }
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// A serial: ASCII letters, digits, `.` and `_` as they are, every other byte `%XX`.
    static func escaped(_ serial: String) -> String {
        percentEncoded(serial) { b in
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"):
                return true
            default: return false
            }
        }
    }

    /// A port: digits, `.` and `-` as they are (`1-1.4`), every other byte `%XX`, so that
    /// `port` never appears in it.
    static func escaped(port: String) -> String {
        percentEncoded(port) { b in
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"): return true
            default: return false
            }
        }
    }

    private static func percentEncoded(_ text: String, keeping kept: (UInt8) -> Bool) -> String {
        var out: [UInt8] = []
        let digits = Array("0123456789ABCDEF".utf8)
        for b in text.utf8 {
            if kept(b) {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(b >> 4)], digits[Int(b & 0xf)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
