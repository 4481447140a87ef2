import AccessoryCore
import AccessoryKit

/// What `accessoryctl describe` tells of one device: its configurations, interfaces,
/// alternate settings and endpoints, from sysfs and the binary descriptors, and the
/// protocols each interface speaks under the rules in force. Encoded as its JSON.
struct DeviceDescription: Encodable {
    /// One configuration.
    struct Configuration: Encodable {
        var value: UInt8
        var active: Bool
        var interfaces: [Interface]
    }

    /// One alternate setting of one interface.
    struct Interface: Encodable {
        var number: UInt8
        var alternate: UInt8
        /// Class, subclass and protocol codes, two hex digits each.
        var `class`: String
        var subclass: String
        var `protocol`: String
        /// The interface string (sysfs `interface`, for the current setting), if any.
        var name: String?
        /// The protocols that open this interface setting under the rules.
        var protocols: [String]
        var endpoints: [Endpoint]
    }

    /// One endpoint.
    struct Endpoint: Encodable {
        /// `0x81`.
        var address: String
        /// `bulk`, `interrupt`, `isochronous` or `control`.
        var kind: String
        /// `in` or `out`.
        var direction: String
        var maxPacketSize: Int
    }

    var bus: Int
    var address: Int?
    var port: String
    var vendor: String?
    var product: String?
    var manufacturer: String?
    var name: String?
    var serial: String?
    /// `bDeviceClass`, two hex digits.
    var `class`: String
    var speed: String?
    var configurations: [Configuration]

    /// The description of `info`, with every configuration of `all` (the active one named
    /// from sysfs) and the protocols `table` gives each interface.
    init(_ info: USBDeviceInfo, allConfigurations all: [USBConfiguration], table: ProtocolTable) {
        let d = info.descriptor
        bus = d.bus
        address = d.address
        port = d.port
        vendor = d.vendor.map(Hex.four)
        product = d.product.map(Hex.four)
        manufacturer = d.manufacturer
        name = d.name
        serial = d.serial
        `class` = Hex.two(info.deviceClass)
        speed = info.speed.map { "\($0)" }
        let active = info.configuration
        let spoken = table.protocols(for: info) ?? []
        // Each protocol on the interface setting it opens.
        var owner: [[UInt8]: [String]] = [:]
        for name in spoken {
            if let i = table.interface(for: name, in: info) { owner[[i.number, i.alternate], default: []].append(name) }
        }
        var configurations = all
        if let active, !configurations.contains(where: { $0.value == active.value }) { configurations.insert(active, at: 0) }
        self.configurations = configurations.map { c in
            let isActive = c.value == active?.value
            let source = isActive ? (active ?? c) : c
            return Configuration(value: c.value, active: isActive, interfaces: source.interfaces.map { i in
                Interface(
                    number: i.number, alternate: i.alternate, class: Hex.two(i.interfaceClass), subclass: Hex.two(i.interfaceSubclass),
                    protocol: Hex.two(i.interfaceProtocol), name: i.name,
                    protocols: isActive ? owner[[i.number, i.alternate]] ?? [] : [],
                    endpoints: i.endpoints.map {
                        Endpoint(
                            address: "0x" + Hex.two($0.address), kind: "\($0.transferType)",
                            direction: $0.direction == .in ? "in" : "out", maxPacketSize: $0.packetSize)
                    })
            })
        }
    }

    /// The short text form: a device line, then a line per configuration, per interface
    /// setting and per endpoint.
    var lines: [String] {
        var out: [String] = []
        let ids = "\(vendor ?? "????"):\(product ?? "????")"
        let words = [manufacturer, name].compactMap { $0 }.joined(separator: " ")
        var head = ids + (words.isEmpty ? "" : " \(words)")
        if let serial { head += ", serial \(serial)" }
        head += ", bus \(bus) address \(address.map(String.init) ?? "?"), port \(port), class \(`class`)"
        if let speed { head += ", \(speed)" }
        out.append(head)
        for c in configurations {
            let count = Set(c.interfaces.map(\.number)).count
            out.append("configuration \(c.value)\(c.active ? " (active)" : ""): \(count) interface\(count == 1 ? "" : "s")")
            for i in c.interfaces {
                var line = "  interface \(i.number) alt \(i.alternate): class \(i.class)/\(i.subclass)/\(i.protocol)"
                line += i.name.map { " \"\($0)\"" } ?? ", no string"
                if !i.protocols.isEmpty { line += ", speaks \(i.protocols.joined(separator: ", "))" }
                out.append(line)
                for e in i.endpoints {
                    out.append("    \(e.address) \(e.kind) \(e.direction) \(e.maxPacketSize) bytes")
                }
            }
        }
        return out
    }
}
