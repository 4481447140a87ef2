import AccessoryCore

/// What the host knows about one device without reading it: bus, address, port chain and the
/// cached descriptors. Plain values, so a hotplug callback may build one.
package struct USBDeviceRecord: Hashable, Sendable {
    package var bus: Int
    package var address: Int
    /// Port numbers from the root hub down; empty for a root hub.
    package var portNumbers: [UInt8]
    package var device: USBDeviceDescriptor
    /// The active configuration, when asked for and available.
    package var configuration: USBConfiguration? = nil
    package var speed: USBSpeed? = nil

    /// The kernel's name for the port chain, such as `1-1.4`, or `usb1` for a root hub.
    package var port: String { Self.portChain(bus: bus, ports: portNumbers) }

    /// The kernel's name for a port chain: `1-1.4`, or `usb1` for a root hub.
    package static func portChain(bus: Int, ports: [UInt8]) -> String {
        guard !ports.isEmpty else { return "usb\(bus)" }
        return "\(bus)-" + ports.map { String($0) }.joined(separator: ".")
    }

    package var node: DeviceNode { DeviceNode(bus: bus, address: address, vendor: device.vendor, product: device.product) }

    /// What an arrival tells the registry before sysfs adds strings and protocols.
    package var accessoryDescriptor: AccessoryDescriptor {
        AccessoryDescriptor(
            bus: bus, address: address, port: port, vendor: device.vendor, product: device.product,
            bcdDevice: device.bcdDevice)
    }
}
