/// A connected accessory: one attach, with its connection ID.
public struct Accessory: Hashable, Sendable, Identifiable {
    public var connectionID: ConnectionID
    public var descriptor: AccessoryDescriptor

    public init(connectionID: ConnectionID, descriptor: AccessoryDescriptor) {
        self.connectionID = connectionID
        self.descriptor = descriptor
    }

    public var id: ConnectionID { connectionID }
    public var physicalIdentity: PhysicalIdentity { descriptor.physicalIdentity }
    public var protocolStrings: [String] { descriptor.protocols ?? [] }
}

extension Accessory: CustomStringConvertible {
    /// `#3 1209:0001 SN1 on 1-1.4 (bus 1, address 5)`.
    public var description: String { "#\(connectionID) \(descriptor)" }
}
