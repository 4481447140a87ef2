/// What the sysfs `descriptors` attribute holds: the device descriptor and every
/// configuration, with anything wrong that the parser worked around.
public struct USBDescriptors: Hashable, Sendable {
    public var device: USBDeviceDescriptor
    public var configurations: [USBConfiguration]
    /// Problems found and worked around. Empty for a well-formed blob.
    public var issues: [USBDescriptorIssue]

    public init(device: USBDeviceDescriptor, configurations: [USBConfiguration], issues: [USBDescriptorIssue] = []) {
        self.device = device
        self.configurations = configurations
        self.issues = issues
    }

    /// The configuration with this `bConfigurationValue`, or else the first one.
    public func configuration(value: UInt8?) -> USBConfiguration? {
        value.flatMap { v in configurations.first { $0.value == v } } ?? configurations.first
    }
}
