import AccessoryCore

/// Where a USB device instance lives: bus, address and its usbfs node, plus the IDs that
/// an error message needs to name the udev rule. A plain value, with no libusb in it.
package struct DeviceNode: Hashable, Sendable, CustomStringConvertible {
    package var bus: Int
    package var address: Int
    package var vendor: UInt16?
    package var product: UInt16?

    /// `/dev/bus/usb/BBB/DDD`.
    package var path: String { Self.path(bus: bus, address: address) }

    package static func path(bus: Int, address: Int) -> String {
        DeviceKey(bus: bus, address: address).devicePath
    }

    package var description: String { "bus \(bus) address \(address)" }
}
