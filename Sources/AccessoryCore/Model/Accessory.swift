/// A connected accessory: one attach, with its connection ID.
public struct Accessory: Hashable, Sendable, Identifiable {
    /// This attach's ID: minted once, never reused.
    public let connectionID: ConnectionID
    /// What is known about the device: bus, address, port, IDs and strings.
    public var descriptor: AccessoryDescriptor
    /// Set when another accessory connected at the time it arrived had the same VID, PID and
    /// serial (cloned serials): its physical identity then includes its port.
    public var hasClonedSerial: Bool
    /// The connection this one continues, when it is a re-enumeration of it: the same
    /// port's connection that ended shortly before (within
    /// ``ConnectionRegistry/linkWindow``) and that was the same physical accessory, or that
    /// the manager itself switched into a new mode (Android Open Accessory, a reset). The
    /// fresh connection after a ghost eviction names the ghost. Never a hidden ID.
    public var previousConnectionID: ConnectionID?

    /// An accessory with the given fields (a registry makes them; tests and tools may too).
    public init(
        connectionID: ConnectionID, descriptor: AccessoryDescriptor, hasClonedSerial: Bool = false,
        previousConnectionID: ConnectionID? = nil
    ) {
        self.connectionID = connectionID
        self.descriptor = descriptor
        self.hasClonedSerial = hasClonedSerial
        self.previousConnectionID = previousConnectionID
    }

    /// The connection ID, for `Identifiable`.
    public var id: ConnectionID { connectionID }

    /// What stays the same when the same accessory comes back: VID, PID and serial (with
    /// the port too for a cloned serial), or the port when it has no serial.
    public var physicalIdentity: PhysicalIdentity {
        let identity = descriptor.physicalIdentity
        if hasClonedSerial, case .serialNumber(let vendor, let product, let serial) = identity {
            return .clonedSerial(vendor: vendor, product: product, serial: serial, bus: descriptor.bus, port: descriptor.port)
        }
        return identity
    }

    /// The protocol strings it speaks (empty when unknown).
    public var protocolStrings: [String] { descriptor.protocols ?? [] }

}

extension Accessory: CustomStringConvertible {
    /// `#3 1209:0001 SN1 on 1-1.4 (bus 1, address 5)`.
    public var description: String { "#\(connectionID) \(descriptor)" }
}
