/// What is known about one enumeration of one USB device.
///
/// Fields a source does not know are `nil`: an imported `udevadm monitor` log may give only
/// the bus and the port. Nothing here is ever invented.
public struct AccessoryDescriptor: Hashable, Sendable {
    /// USB bus number.
    public var bus: Int
    /// Device address (1–127), if known.
    public var address: Int?
    /// Kernel port chain, such as `1-1.4`.
    public var port: String
    /// Vendor ID (VID), if known.
    public var vendor: UInt16?
    /// Product ID (PID), if known.
    public var product: UInt16?
    /// Device release number (`bcdDevice`), if known.
    public var bcdDevice: UInt16?
    /// Serial number string, if the device has one and it is known.
    public var serial: String?
    /// Manufacturer string, if known.
    public var manufacturer: String?
    /// Product name string, if known.
    public var name: String?
    /// Protocol strings the accessory speaks, if known.
    public var protocols: [String]?

    /// A descriptor with the given fields; unknown ones are `nil`.
    public init(
        bus: Int, address: Int?, port: String, vendor: UInt16? = nil, product: UInt16? = nil,
        bcdDevice: UInt16? = nil, serial: String? = nil, manufacturer: String? = nil,
        name: String? = nil, protocols: [String]? = nil
    ) {
        self.bus = bus
        self.address = address
        self.port = port
        self.vendor = vendor
        self.product = product
        self.bcdDevice = bcdDevice
        self.serial = serial
        self.manufacturer = manufacturer
        self.name = name
        self.protocols = protocols
    }

    /// The lookup key, when the address is known.
    package var key: DeviceKey? { address.map { DeviceKey(bus: bus, address: $0) } }

    /// Where the device is plugged in.
    public var portKey: PortKey { PortKey(bus: bus, port: port) }

    /// The descriptor fingerprint that tells two instances on one address apart.
    package var fingerprint: Fingerprint {
        Fingerprint(vendor: vendor, product: product, bcdDevice: bcdDevice, serial: serial)
    }

    /// Whether `other` can be the same instance: same bus and port, and every field that both
    /// sides know (address, VID, PID, bcdDevice, serial) is equal.
    package func isSameInstance(as other: AccessoryDescriptor) -> Bool {
        bus == other.bus && port == other.port
            && agree(address, other.address)
            && fingerprint.agrees(with: other.fingerprint)
    }

    /// The identity of the physical accessory, stable across re-attaches.
    public var physicalIdentity: PhysicalIdentity {
        if let serial, !serial.isEmpty, let vendor, let product {
            return .serialNumber(vendor: vendor, product: product, serial: serial)
        }
        return .port(bus: bus, port: port, vendor: vendor, product: product)
    }

    /// `VID:PID` in lowercase hex, or `?` for what is unknown.
    package var vendorProduct: String {
        "\(vendor.map(Hex.four) ?? "????"):\(product.map(Hex.four) ?? "????")"
    }

    /// Copies into `self` the fields that `self` lacks and `other` knows.
    package mutating func fillGaps(from other: AccessoryDescriptor) {
        address = address ?? other.address
        vendor = vendor ?? other.vendor
        product = product ?? other.product
        bcdDevice = bcdDevice ?? other.bcdDevice
        serial = serial ?? other.serial
        manufacturer = manufacturer ?? other.manufacturer
        name = name ?? other.name
        protocols = protocols ?? other.protocols
    }
}

/// VID, PID, bcdDevice and serial: what distinguishes two devices that got the same address.
package struct Fingerprint: Hashable, Sendable {
    package var vendor: UInt16?
    package var product: UInt16?
    package var bcdDevice: UInt16?
    package var serial: String?

    /// Equal in every field that both sides know.
    package func agrees(with other: Fingerprint) -> Bool {
        agree(vendor, other.vendor) && agree(product, other.product)
            && agree(bcdDevice, other.bcdDevice) && agree(serial, other.serial)
    }
}

/// Identity of a physical accessory, so an application can see "the same one came back".
public enum PhysicalIdentity: Hashable, Sendable, CustomStringConvertible {
    /// VID, PID and a serial number: follows the accessory to any port.
    case serialNumber(vendor: UInt16, product: UInt16, serial: String)
    /// No serial: the port it is plugged into stands in for it.
    case port(bus: Int, port: String, vendor: UInt16?, product: UInt16?)
    /// A serial another connected accessory shares (cloned serials): the port tells them
    /// apart.
    case clonedSerial(vendor: UInt16, product: UInt16, serial: String, bus: Int, port: String)

    public var description: String {
        switch self {
        case .serialNumber(let v, let p, let s): return "\(Hex.four(v)):\(Hex.four(p)):\(s)"
        case .port(_, let port, let v, let p):
            return "\(v.map(Hex.four) ?? "????"):\(p.map(Hex.four) ?? "????")@\(port)"
        case .clonedSerial(let v, let p, let s, _, let port): return "\(Hex.four(v)):\(Hex.four(p)):\(s)@\(port)"
        }
    }
}

@inline(__always)
func agree<T: Equatable>(_ a: T?, _ b: T?) -> Bool {
    guard let a, let b else { return true }
    return a == b
}

/// Lowercase hexadecimal digits: four, as the trace format writes IDs, or two for a byte.
package enum Hex {
    package static func four(_ value: UInt16) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let bytes: [UInt8] = [
            digits[Int(value >> 12) & 0xf], digits[Int(value >> 8) & 0xf],
            digits[Int(value >> 4) & 0xf], digits[Int(value) & 0xf],
        ]
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `81`: a byte's two digits.
    package static func two(_ value: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(value >> 4)], digits[Int(value & 0xf)]], as: UTF8.self)
    }

    /// Parses exactly four hexadecimal digits (either case).
    package static func parseFour(_ text: String) -> UInt16? {
        guard text.utf8.count == 4 else { return nil }
        return UInt16(text, radix: 16)
    }
}

extension AccessoryDescriptor: CustomStringConvertible {
    /// `1209:0001 SN1 on 1-1.4 (bus 1, address 5)`: what a person needs to find the device.
    public var description: String {
        let serial = serial.flatMap { $0.isEmpty ? nil : " \($0)" } ?? ""
        let address = address.map { ", address \($0)" } ?? ""
        return "\(vendorProduct)\(serial) on \(port) (bus \(bus)\(address))"
    }
}
