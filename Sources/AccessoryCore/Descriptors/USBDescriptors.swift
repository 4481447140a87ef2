/// What the sysfs `descriptors` attribute holds: the device descriptor and every
/// configuration, with anything wrong that the parser worked around.
package struct USBDescriptors: Hashable, Sendable {
    package var device: USBDeviceDescriptor
    package var configurations: [USBConfiguration]
    /// Problems found and worked around. Empty for a well-formed blob.
    package var issues: [USBDescriptorIssue]

    package init(device: USBDeviceDescriptor, configurations: [USBConfiguration], issues: [USBDescriptorIssue] = []) {
        self.device = device
        self.configurations = configurations
        self.issues = issues
    }

    /// The configuration with this `bConfigurationValue`, or else the first one.
    package func configuration(value: UInt8?) -> USBConfiguration? {
        value.flatMap { v in configurations.first { $0.value == v } } ?? configurations.first
    }
}
