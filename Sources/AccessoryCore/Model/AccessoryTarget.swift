/// Which accessory a user means: by IDs (and serial), by serial alone, by port, or by bus and
/// address. `accessoryctl open TARGET` and the manager's `accessory(matching:)` share this matching.
public enum AccessoryTarget: Hashable, Sendable, CustomStringConvertible {
    /// `VID:PID` or `VID:PID:SERIAL`.
    case ids(vendor: UInt16, product: UInt16, serial: String?)
    /// A serial number, whatever the IDs.
    case serial(String)
    /// The kernel's port chain, such as `1-1.4`.
    case port(String)
    /// `BUS:ADDRESS` as `accessoryctl list` prints it, such as `1:5`: one enumeration only.
    case address(bus: Int, address: Int)

    /// Why a target's text could not be read.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads `VID:PID[:SERIAL]` (four hex digits each), `BUS:ADDRESS` (decimal, as `list`
    /// prints it) or a port chain (`1-1.4`).
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        let decimal = { (s: String) in !s.isEmpty && s.count <= 3 && s.allSatisfy(\.isASCII) && s.allSatisfy(\.isNumber) }
        if parts.count >= 2, let vendor = Hex.parseFour(parts[0]), let product = Hex.parseFour(parts[1]) {
            let serial = parts.count == 3 && !parts[2].isEmpty ? parts[2] : nil
            self = .ids(vendor: vendor, product: product, serial: serial)
        } else if parts.count == 2, decimal(parts[0]), decimal(parts[1]), let bus = Int(parts[0]), let address = Int(parts[1]),
            bus > 0, (1...127).contains(address)
        {
            self = .address(bus: bus, address: address)
        } else if parts.count == 1, PortChain.isValid(text.utf8) {
            self = .port(text)
        } else {
            throw ParseError(description: "TARGET must be VID:PID[:SERIAL] with 4 hex digits each (1209:0001), BUS:ADDRESS as list prints it (1:5), or a port chain (1-1.4); got '\(text)'")
        }
    }

    /// Whether `accessory` is the one meant.
    package func matches(_ accessory: Accessory) -> Bool {
        let d = accessory.descriptor
        switch self {
        case .ids(let vendor, let product, let serial):
            return d.vendor == vendor && d.product == product && (serial == nil || d.serial == serial)
        case .serial(let serial):
            return d.serial == serial
        case .port(let port):
            return d.port == port
        case .address(let bus, let address):
            return d.bus == bus && d.address == address
        }
    }

    public var description: String {
        switch self {
        case .ids(let vendor, let product, let serial):
            return "\(Hex.four(vendor)):\(Hex.four(product))" + (serial.map { ":\($0)" } ?? "")
        case .serial(let serial):
            return "serial \(serial)"
        case .port(let port):
            return port
        case .address(let bus, let address):
            return "\(bus):\(address)"
        }
    }
}
