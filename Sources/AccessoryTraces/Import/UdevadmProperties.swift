import AccessoryCore
import Glibc

/// The `KEY=VALUE` properties of one `udevadm monitor` event that an import reads; the
/// others are skipped as the log is read, without becoming strings.
struct UdevadmProperties: Sendable {
    /// The properties read, in a fixed order.
    enum Key: Int, CaseIterable, Sendable {
        case devtype, seqnum, busnum, devnum, devname, product
        case vendorID, modelID, revision, serialShort, vendorEncoded, vendor, modelEncoded, model
    }

    /// The name of each ``Key`` as the log spells it, as bytes.
    private static let names: [[UInt8]] = [
        "DEVTYPE", "SEQNUM", "BUSNUM", "DEVNUM", "DEVNAME", "PRODUCT",
        "ID_VENDOR_ID", "ID_MODEL_ID", "ID_REVISION", "ID_SERIAL_SHORT", "ID_VENDOR_ENC", "ID_VENDOR",
        "ID_MODEL_ENC", "ID_MODEL",
    ].map { Array($0.utf8) }

    /// Empty until the first property is set: most events' properties are never kept.
    private var values: [String?] = []

    subscript(key: Key) -> String? {
        get { values.isEmpty ? nil : values[key.rawValue] }
        set {
            if values.isEmpty { values = [String?](repeating: nil, count: Key.allCases.count) }
            values[key.rawValue] = newValue
        }
    }

    /// The keys by the length of their names, for ``key(named:)``.
    private static let byLength: [[(key: Key, name: [UInt8])]] = (0...15).map { length in
        Key.allCases.filter { names[$0.rawValue].count == length }.map { ($0, names[$0.rawValue]) }
    }

    /// The key spelled by `name`, if an import reads it.
    static func key(named name: UnsafeRawBufferPointer) -> Key? {
        guard name.count < byLength.count else { return nil }
        for candidate in byLength[name.count] where candidate.name[0] == name[0] {
            let equal = candidate.name.withUnsafeBytes { memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }
            if equal { return candidate.key }
        }
        return nil
    }

    /// Copies in the properties this event lacks from `other`.
    mutating func merge(_ other: UdevadmProperties) {
        guard !other.values.isEmpty else { return }
        guard !values.isEmpty else {
            values = other.values
            return
        }
        for i in values.indices where values[i] == nil { values[i] = other.values[i] }
    }
}
