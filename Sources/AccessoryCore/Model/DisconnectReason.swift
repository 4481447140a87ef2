/// Why a connection ended. Every disconnection carries one; there is no "unknown".
public enum DisconnectReason: Hashable, Sendable, CustomStringConvertible {
    /// A remove event was seen for this instance.
    case unplugged
    /// A reconcile (or a contradicting event) showed the instance is gone.
    case ghostEvicted(GhostEvidence)
    /// The manager stopped.
    case shutdown
    /// A recovery ended the connection with this step (a reset that re-enumerated, a
    /// reauthorization or a power cycle); the connection that comes back names this one as
    /// its `Accessory.previousConnectionID`.
    case recovered(RecoveryStep)

    /// The contract's reason code: `unplugged`, `ghost-evicted`, `shutdown` or `recovered`.
    public var code: String {
        switch self {
        case .unplugged: return "unplugged"
        case .ghostEvicted: return "ghost-evicted"
        case .shutdown: return "shutdown"
        case .recovered: return "recovered"
        }
    }

    /// What was seen, in words, for evictions; the step, for recoveries.
    public var evidence: String? {
        switch self {
        case .ghostEvicted(let e): return e.description
        case .recovered(let step): return step.description
        case .unplugged, .shutdown: return nil
        }
    }

    public var description: String {
        evidence.map { "\(code): \($0)" } ?? code
    }
}

/// What showed that a registry entry was a ghost.
public enum GhostEvidence: Hashable, Sendable, CustomStringConvertible {
    /// The instance is missing from the OS's device list.
    case absentFromSnapshot
    /// The bus and address now belong to a device with another fingerprint.
    indirect case addressReused(by: AccessoryDescriptor)
    /// A new instance was attached on the same port, so this one must have left.
    indirect case portReplaced(by: AccessoryDescriptor)
    /// A USB operation on the device returned NO_DEVICE.
    case noDevice(operation: String)

    public var description: String {
        switch self {
        case .absentFromSnapshot:
            return "absent from the OS device list"
        case .addressReused(let d):
            return "bus \(d.bus) address \(d.address.map(String.init) ?? "?") now belongs to \(d.vendorProduct)\(d.serial.map { " serial \($0)" } ?? "")"
        case .portReplaced(let d):
            return "port \(d.port) now holds a new instance at address \(d.address.map(String.init) ?? "?")"
        case .noDevice(let op):
            return "\(op) returned NO_DEVICE"
        }
    }
}
