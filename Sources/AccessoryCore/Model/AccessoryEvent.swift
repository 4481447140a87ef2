/// A notification for applications: an accessory connected, or disconnected with a reason.
public enum AccessoryEvent: Hashable, Sendable {
    case connected(Accessory)
    case disconnected(Accessory, DisconnectReason)

    public var accessory: Accessory {
        switch self {
        case .connected(let a), .disconnected(let a, _): return a
        }
    }
}
