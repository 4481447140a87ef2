/// One configuration descriptor with its interfaces (USB 2.0 §9.6.3).
package struct USBConfiguration: Hashable, Sendable {
    /// `bConfigurationValue`: the value `SET_CONFIGURATION` takes.
    package var value: UInt8
    /// `iConfiguration`: the index of the configuration's string descriptor (0: none).
    package var nameIndex: UInt8
    /// `bmAttributes`: bit 6 self-powered, bit 5 remote wake-up.
    package var attributes: UInt8
    /// `bMaxPower`, in units of 2 mA (8 mA at SuperSpeed).
    package var maxPower: UInt8
    /// `bNumInterfaces` as declared.
    package var declaredInterfaceCount: UInt8
    /// Every interface descriptor found, one per alternate setting, in descriptor order.
    package var interfaces: [USBInterface]

    package init(
        value: UInt8, nameIndex: UInt8 = 0, attributes: UInt8 = 0x80, maxPower: UInt8 = 0,
        declaredInterfaceCount: UInt8 = 0, interfaces: [USBInterface] = []
    ) {
        self.value = value
        self.nameIndex = nameIndex
        self.attributes = attributes
        self.maxPower = maxPower
        self.declaredInterfaceCount = declaredInterfaceCount
        self.interfaces = interfaces
    }

    /// The interface with this number and alternate setting, if any.
    package func interface(_ number: UInt8, alternate: UInt8 = 0) -> USBInterface? {
        interfaces.first { $0.number == number && $0.alternate == alternate }
    }
}
