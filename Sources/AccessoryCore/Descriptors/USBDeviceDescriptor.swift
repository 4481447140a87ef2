/// A USB device descriptor (USB 2.0 §9.6.1), as the device reported it.
package struct USBDeviceDescriptor: Hashable, Sendable {
    /// The descriptor's size in bytes: 18.
    package static let size = 18

    /// USB specification release, as BCD (`0x0200` is USB 2.0).
    package var bcdUSB: UInt16
    package var deviceClass: UInt8
    package var deviceSubclass: UInt8
    package var deviceProtocol: UInt8
    /// Maximum packet size of endpoint 0.
    package var maxPacketSize0: UInt8
    package var vendor: UInt16
    package var product: UInt16
    /// Device release number, as BCD.
    package var bcdDevice: UInt16
    /// String descriptor indices (0: none).
    package var manufacturerIndex: UInt8
    package var productIndex: UInt8
    package var serialNumberIndex: UInt8
    package var configurationCount: UInt8

    package init(
        bcdUSB: UInt16, deviceClass: UInt8, deviceSubclass: UInt8, deviceProtocol: UInt8,
        maxPacketSize0: UInt8, vendor: UInt16, product: UInt16, bcdDevice: UInt16,
        manufacturerIndex: UInt8, productIndex: UInt8, serialNumberIndex: UInt8,
        configurationCount: UInt8
    ) {
        self.bcdUSB = bcdUSB
        self.deviceClass = deviceClass
        self.deviceSubclass = deviceSubclass
        self.deviceProtocol = deviceProtocol
        self.maxPacketSize0 = maxPacketSize0
        self.vendor = vendor
        self.product = product
        self.bcdDevice = bcdDevice
        self.manufacturerIndex = manufacturerIndex
        self.productIndex = productIndex
        self.serialNumberIndex = serialNumberIndex
        self.configurationCount = configurationCount
    }

    /// Whether this is a hub (class 0x09).
    package var isHub: Bool { deviceClass == 0x09 }
}
