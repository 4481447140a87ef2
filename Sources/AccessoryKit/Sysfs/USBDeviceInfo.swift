import AccessoryCore

/// Everything the OS says about one USB device instance: the accessory descriptor that the
/// registry works with, plus class, speed and the active configuration.
public struct USBDeviceInfo: Sendable, Hashable {
    /// Bus, address, port, IDs, strings and protocols.
    public var descriptor: AccessoryDescriptor
    /// `bDeviceClass`: 0x00 means "per interface", 0x09 is a hub, 0xff vendor-specific.
    public var deviceClass: UInt8
    /// The device descriptor, when the binary descriptors were readable.
    public var deviceDescriptor: USBDeviceDescriptor?
    /// The active configuration (or the first, when the device is unconfigured), with
    /// interface strings filled in where the OS has them.
    public var configuration: USBConfiguration?
    public var speed: USBSpeed?
    /// Problems the descriptor parser worked around; empty for a well-formed device.
    public var descriptorIssues: [USBDescriptorIssue]

    public init(
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
    public var isHub: Bool { deviceClass == 0x09 }

    /// The usbfs node, `/dev/bus/usb/BBB/DDD`, when the address is known.
    public var devicePath: String? {
        descriptor.address.map { DeviceNode.path(bus: descriptor.bus, address: $0) }
    }
}
