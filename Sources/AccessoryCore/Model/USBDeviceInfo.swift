/// Everything the OS says about one USB device instance: the accessory descriptor that the
/// registry works with, plus class, speed and the active configuration. It is what an
/// ``AccessoryTracker`` is told of a device.
public struct USBDeviceInfo: Sendable, Hashable {
    /// Bus, address, port, IDs, strings and protocols.
    public var descriptor: AccessoryDescriptor
    /// `bDeviceClass`: 0x00 means "per interface", 0x09 is a hub, 0xff vendor-specific.
    public var deviceClass: UInt8
    /// The device descriptor, when the binary descriptors were readable.
    package var deviceDescriptor: USBDeviceDescriptor?
    /// The active configuration (or the first, when the device is unconfigured), with
    /// interface strings filled in where the OS has them.
    package var configuration: USBConfiguration?
    /// The signalling rate, when the OS says.
    public var speed: USBSpeed?
    /// Problems the descriptor parser worked around; empty for a well-formed device.
    package var descriptorIssues: [USBDescriptorIssue]

    /// A device as a backend that knows only its descriptor and class describes it.
    public init(descriptor: AccessoryDescriptor, deviceClass: UInt8 = 0, speed: USBSpeed? = nil) {
        self.init(descriptor: descriptor, deviceClass: deviceClass, deviceDescriptor: nil, speed: speed)
    }

    /// A device as the OS describes it.
    package init(
        descriptor: AccessoryDescriptor, deviceClass: UInt8, deviceDescriptor: USBDeviceDescriptor?,
        configuration: USBConfiguration? = nil, speed: USBSpeed? = nil, descriptorIssues: [USBDescriptorIssue] = []
    ) {
        self.descriptor = descriptor
        self.deviceClass = deviceClass
        self.deviceDescriptor = deviceDescriptor
        self.configuration = configuration
        self.speed = speed
        self.descriptorIssues = descriptorIssues
    }

    /// Whether it says no more than its descriptor.
    package var isBareDescriptor: Bool {
        deviceClass == 0 && deviceDescriptor == nil && configuration == nil && speed == nil && descriptorIssues.isEmpty
    }

    /// Whether the device is a hub (class 0x09); root hubs (`usbN`) are hubs.
    public var isHub: Bool { deviceClass == 0x09 }
}
