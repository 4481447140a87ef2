/// One interface descriptor (one alternate setting of one interface) and its endpoints.
public struct USBInterface: Hashable, Sendable {
    /// `bInterfaceNumber`.
    public var number: UInt8
    /// `bAlternateSetting`.
    public var alternate: UInt8
    public var interfaceClass: UInt8
    public var interfaceSubclass: UInt8
    public var interfaceProtocol: UInt8
    /// `iInterface`: the index of the interface's string descriptor (0: none).
    public var nameIndex: UInt8
    /// `bNumEndpoints` as declared; ``endpoints`` holds what was actually found.
    public var declaredEndpointCount: UInt8
    public var endpoints: [USBEndpoint]
    /// The interface's string, once someone has read it (sysfs `interface`, or the string
    /// descriptor). The parser never sets it.
    public var name: String?

    public init(
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
    public var isVendorSpecific: Bool { interfaceClass == 0xff }
}
