import AccessoryCore
import AccessoryKit
import ArgumentParser
import FoundationEssentials

struct HubsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubs",
        abstract: "List every hub: how its ports switch power, and what is on each port.",
        discussion: """
            For each hub (root hubs too): its port chain, USB version, number of ports, how its \
            ports switch power (per-port, ganged or none, from its hub descriptor's \
            wHubCharacteristics, as uhubctl reads it), the other half of a USB 3 hub (peer), and \
            per port whether it is powered and the device on it. Reading a hub's descriptor opens \
            the hub: without permission the switching shows as unknown, with a note. Only a \
            per-port hub can power-cycle one port ('accessoryctl power'). Exit status 0.

            Examples:
              accessoryctl hubs
              accessoryctl hubs --json | jq '.[] | select(.switching == "per-port") | .hub'
            """)

    @Flag(help: "Print one JSON array, one object per hub.")
    var json = false

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        global.bootstrapLogging()
        OutputStream.ignoreSigpipe()
        let manager = try await global.startManager()
        let hubs = await manager.hubs()
        await manager.shutdown()
        let out = OutputStream(fd: 1, lineBuffered: false)
        defer { out.flush() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
            out.writeLine(String(decoding: try encoder.encode(hubs.map(HubEntry.init)), as: UTF8.self))
        } else {
            for hub in hubs { for line in Self.lines(hub) { out.writeLine(line) } }
        }
    }

    /// A hub's lines, as uhubctl lists it: the hub, then one indented line per port.
    static func lines(_ hub: USBHub) -> [String] {
        let switching = hub.switching.map { "\($0.rawValue) power switching" } ?? "power switching unknown"
        var head = "hub \(hub.name) (bus \(hub.bus) address \(hub.address)): USB \(hub.usbVersion), \(hub.ports.count) ports, \(switching)"
        if let peer = hub.peer { head += ", USB 3 peer \(peer)" }
        var lines = [head]
        if let note = hub.note { lines.append("  note: \(note)") }
        for port in hub.ports {
            let power = port.powered.map { $0 ? "power on" : "power off" } ?? "power ?"
            var line = "  port \(port.number) (\(port.name)): \(power)"
            if let d = port.device { line += ", " + Self.describe(d) }
            lines.append(line)
        }
        return lines
    }

    static func describe(_ d: USBDeviceInfo) -> String {
        let hex = { (v: UInt16?) in v.map(Hex.four) ?? "????" }
        var text = "\(hex(d.descriptor.vendor)):\(hex(d.descriptor.product))"
        if let serial = d.descriptor.serial { text += " \(serial)" }
        if let name = d.descriptor.name { text += " \(name)" }
        if d.isHub { text += " (hub)" }
        return text
    }
}

/// One hub as `hubs --json` prints it.
struct HubEntry: Encodable {
    struct Port: Encodable {
        var number: Int
        var port: String
        var powered: Bool?
        var disableFile: Bool
        var peer: String?
        var device: Device?
    }

    struct Device: Encodable {
        var bus: Int
        var address: Int?
        var vendor: String?
        var product: String?
        var serial: String?
        var name: String?
        var hub: Bool
    }

    var hub: String
    var bus: Int
    var address: Int
    var usbVersion: String
    var ports: Int
    var switching: String?
    var peer: String?
    var note: String?
    var portStatus: [Port]

    init(_ h: USBHub) {
        let hex = { (v: UInt16?) in v.map(Hex.four) }
        hub = h.name
        bus = h.bus
        address = h.address
        usbVersion = h.usbVersion
        ports = h.ports.count
        switching = h.switching?.rawValue
        peer = h.peer
        note = h.note
        portStatus = h.ports.map { p in
            Port(number: p.number, port: p.name, powered: p.powered, disableFile: p.hasDisableFile, peer: p.peer, device: p.device.map { d in
                Device(bus: d.descriptor.bus, address: d.descriptor.address, vendor: hex(d.descriptor.vendor), product: hex(d.descriptor.product),
                       serial: d.descriptor.serial, name: d.descriptor.name, hub: d.isHub)
            })
        }
    }

    func encode(to encoder: any Encoder) throws {
        enum Key: String, CodingKey { case hub, bus, address, usbVersion, ports, switching, peer, note, portStatus }
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(hub, forKey: .hub)
        try c.encode(bus, forKey: .bus)
        try c.encode(address, forKey: .address)
        try c.encode(usbVersion, forKey: .usbVersion)
        try c.encode(ports, forKey: .ports)
        try c.encode(switching, forKey: .switching)  // null when unknown
        try c.encode(peer, forKey: .peer)
        try c.encode(note, forKey: .note)
        try c.encode(portStatus, forKey: .portStatus)
    }
}
