/// A notification for applications: an accessory connected, or disconnected with a reason.
public enum AccessoryEvent: Hashable, Sendable {
    /// The accessory connected: a fresh connection ID.
    case connected(Accessory)
    /// The accessory's connection ended, for the reason given.
    case disconnected(Accessory, DisconnectReason)

    /// The accessory the event is about.
    public var accessory: Accessory {
        switch self {
        case .connected(let a), .disconnected(let a, _): return a
        }
    }

    /// The connection ID of the accessory the event is about (without a copy of it).
    package var connectionID: ConnectionID { connection.id }

    /// The descriptor of the accessory the event is about.
    package var descriptor: AccessoryDescriptor {
        switch self {
        case .connected(let a), .disconnected(let a, _): return a.descriptor
        }
    }

    /// The connection ID of the accessory the event is about, and whether it connected.
    package var connection: (id: ConnectionID, connected: Bool) {
        switch self {
        case .connected(let a): return (a.connectionID, true)
        case .disconnected(let a, _): return (a.connectionID, false)
        }
    }
}

extension AccessoryEvent: CustomStringConvertible {
    /// `connected #3 1209:0001 SN1 on 1-1.4 (bus 1, address 5)`, or `disconnected #3 …:
    /// ghost-evicted: …` with the reason.
    public var description: String {
        switch self {
        case .connected(let a): return "connected \(a)"
        case .disconnected(let a, let reason): return "disconnected \(a): \(reason)"
        }
    }
}
