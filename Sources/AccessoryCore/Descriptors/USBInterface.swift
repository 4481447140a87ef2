/// One interface descriptor (one alternate setting of one interface) and its endpoints.
package struct USBInterface: Hashable, Sendable {
    /// `bInterfaceNumber`.
    package var number: UInt8
    /// `bAlternateSetting`.
    package var alternate: UInt8
    package var interfaceClass: UInt8
    package var interfaceSubclass: UInt8
    package var interfaceProtocol: UInt8
    /// `iInterface`: the index of the interface's string descriptor (0: none).
    package var nameIndex: UInt8
    /// `bNumEndpoints` as declared; ``endpoints`` holds what was actually found.
    package var declaredEndpointCount: UInt8
    package var endpoints: [USBEndpoint]
    /// The interface's string, once someone has read it (sysfs `interface`, or the string
    /// descriptor). The parser never sets it.
    package var name: String?

    package init(
        number: UInt8, alternate: UInt8, interfaceClass: UInt8, interfaceSubclass: UInt8,
        interfaceProtocol: UInt8, nameIndex: UInt8, declaredEndpointCount: UInt8 = 0,
        endpoints: [USBEndpoint] = [], name: String? = nil
    ) {
        self.number = number
        self.alternate = alternate
        self.interfaceClass = interfaceClass
        self.interfaceSubclass = interfaceSubclass
        self.interfaceProtocol = interfaceProtocol
        self.nameIndex = nameIndex
        self.declaredEndpointCount = declaredEndpointCount
        self.endpoints = endpoints
        self.name = name
    }

    /// Whether the class is vendor-specific (0xff), as accessory protocols use.
    package var isVendorSpecific: Bool { interfaceClass == 0xff }
}
