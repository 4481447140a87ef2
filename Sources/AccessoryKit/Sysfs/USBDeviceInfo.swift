import AccessoryCore

/// Everything the OS says about one USB device instance: the accessory descriptor that the
/// registry works with, plus class, speed and the active configuration.
package struct USBDeviceInfo: Sendable, Hashable {
    /// Bus, address, port, IDs, strings and protocols.
    package var descriptor: AccessoryDescriptor
    /// `bDeviceClass`: 0x00 means "per interface", 0x09 is a hub, 0xff vendor-specific.
    package var deviceClass: UInt8
    /// The device descriptor, when the binary descriptors were readable.
    package var deviceDescriptor: USBDeviceDescriptor?
    /// The active configuration (or the first, when the device is unconfigured), with
    /// interface strings filled in where the OS has them.
    package var configuration: USBConfiguration?
    package var speed: USBSpeed?
    /// Problems the descriptor parser worked around; empty for a well-formed device.
    package var descriptorIssues: [USBDescriptorIssue]

    package init(
        descriptor: AccessoryDescriptor, deviceClass: UInt8, deviceDescriptor: USBDeviceDescriptor? = nil,
        configuration: USBConfiguration? = nil, speed: USBSpeed? = nil, descriptorIssues: [USBDescriptorIssue] = []
    ) {
        self.descriptor = descriptor
        self.deviceClass = deviceClass
        self.deviceDescriptor = deviceDescriptor
        self.configuration = configuration
        self.speed = speed
        self.descriptorIssues = descriptorIssues
    }

    /// Whether the device is a hub (class 0x09); root hubs (`usbN`) are hubs.
    package var isHub: Bool { deviceClass == 0x09 }

    /// The usbfs node, `/dev/bus/usb/BBB/DDD`, when the address is known.
    package var devicePath: String? {
        descriptor.address.map { DeviceNode.path(bus: descriptor.bus, address: $0) }
    }
}
