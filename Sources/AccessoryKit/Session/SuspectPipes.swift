import AccessoryCore
import Logging

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

    /// A NO_DEVICE on `id` from `operation` that sysfs has not confirmed for the whole wait:
    /// the connection (`entry`) stays, and the waiting pipes end with an I/O error that says so.
    mutating func falseAlarm(_ id: ConnectionID, on entry: Accessory?, operation: String, logger: Logger) {
        let device = entry.map { "bus \($0.descriptor.bus) address \($0.descriptor.address.map(String.init) ?? "?")" } ?? "the device"
        logger.warning(
            "\(operation) on connection \(id) reported the device gone, but sysfs still lists it (\(device)); keeping the connection. Is its device node missing (a container given a stale --device)?")
        for p in waiting.removeValue(forKey: id) ?? [] {
            p.pipe.fail(AccessoryError(
                .io,
                "\(p.sign.operation) on accessory \(p.label) returned \(p.sign.seen), but sysfs still lists the accessory (\(device)); its device node may be missing or unusable",
                operation: p.sign.operation))
        }
    }

    /// What a session's data plane calls when a transfer finds its device (maybe) gone: it
    /// hands the pipe to `manager`'s verdict, which ends it with the reason the connection's
    /// disconnect carries (a LEFT event makes it `unplugged`), or with an I/O error when
    /// sysfs still lists the accessory. The pipe's own evidence is only the fallback, for a
    /// manager already gone.
    static func reporter(
        to manager: AccessoryManager, id: ConnectionID, label: String
    ) -> @Sendable (DeviceGoneSign, DataPlane) -> Void {
        { [weak manager, inbox = manager.inbox] sign, pipe in
            let ownEvidence: @Sendable () -> Void = { pipe.fail(AccessorySession.disconnectedError(.ghostEvicted(.noDevice(operation: sign.operation)), label: label)) }
            let posted = inbox.post { [weak manager] in
                guard let manager else { return ownEvidence() }
                await manager.sessionSawDeviceGone(id, sign, pipe: pipe, label: label)
            }
            if !posted { ownEvidence() }  // the manager has shut down
        }
    }
}
