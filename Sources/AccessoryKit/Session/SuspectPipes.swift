import AccessoryCore

/// The data planes of sessions whose transfers found their device (maybe) gone, waiting for
/// the manager's verdict on their connection: a disconnect ends them with its reason, a
/// false alarm with an I/O error that says sysfs still lists the device.
struct SuspectPipes {
    private var waiting: [ConnectionID: [(pipe: DataPlane, sign: DeviceGoneSign, label: String)]] = [:]

    /// `pipe` of the session `label` saw `sign` on connection `id`.
    mutating func add(_ id: ConnectionID, pipe: DataPlane, sign: DeviceGoneSign, label: String) {
        waiting[id, default: []].append((pipe, sign, label))
    }

    /// The connection is gone for `reason`: its waiting pipes end with it.
    mutating func disconnected(_ id: ConnectionID, reason: DisconnectReason) {
        for p in waiting.removeValue(forKey: id) ?? [] { p.pipe.fail(AccessorySession.disconnectedError(reason, label: p.label)) }
    }

    /// sysfs kept listing `device` for the whole wait: the waiting pipes end with an I/O error.
    mutating func falseAlarm(_ id: ConnectionID, device: String) {
        for p in waiting.removeValue(forKey: id) ?? [] {
            p.pipe.fail(AccessoryError(
                .io,
                "\(p.sign.operation) on accessory \(p.label) returned \(p.sign.seen), but sysfs still lists the accessory (\(device)); its device node may be missing or unusable",
                operation: p.sign.operation))
        }
    }
}
