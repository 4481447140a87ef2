import AccessoryCore
import Logging
import AccessoryLocking

/// What an open session holds and what closing it gives back: the data plane, the device,
/// the claimed interface, a detached kernel driver. The manager keeps this, not the
/// ``AccessorySession`` handle, so a handle nobody holds any more can be closed and
/// reported instead of leaking its device (its usbfs descriptor on hardware).
final class SessionResources: Sendable {
    let name: String
    /// `1209:0001 SN1`: the accessory, for messages.
    let label: String
    let key: SessionKey
    let interfaceNumber: UInt8
    let pipe: DataPlane
    let logger: Logger
    private let lifecycle: Locked<Lifecycle>

    private struct Lifecycle {
        /// The open device; `nil` once closed.
        var device: (any USBDeviceConnection)?
        /// Whether the session detached a kernel driver, to attach again at close.
        var detachedDriver: Bool
        var phase: Phase = .open
    }

    private enum Phase {
        case open
        /// Closing; these wait for it to finish.
        case closing([CheckedContinuation<Void, Never>])
        case closed
    }

    init(
        name: String, label: String, key: SessionKey, interface: UInt8, device: any USBDeviceConnection,
        detachedDriver: Bool, pipe: DataPlane, logger: Logger
    ) {
        self.name = name
        self.label = label
        self.key = key
        self.interfaceNumber = interface
        self.pipe = pipe
        self.logger = logger
        self.lifecycle = Locked(Lifecycle(device: device, detachedDriver: detachedDriver))
    }

    /// The open device; `nil` once closed.
    var device: (any USBDeviceConnection)? { lifecycle.withLock { $0.device } }

    /// Whether ``close(manager:)`` has finished.
    var isClosed: Bool {
        lifecycle.withLock { if case .closed = $0.phase { true } else { false } }
    }

    /// Ends both directions with the manager's disconnect reason.
    func connectionEnded(_ reason: DisconnectReason) {
        pipe.fail(AccessorySession.disconnectedError(reason, label: label))
    }

    /// Closes (see ``AccessorySession/close()``), then tells `manager`. Idempotent; a second
    /// call waits for the first to finish.
    func close(manager: AccessoryManager) async {
        let first: Bool? = lifecycle.withLock { l in
            switch l.phase {
            case .open:
                l.phase = .closing([])
                return true
            case .closing: return false
            case .closed: return nil
            }
        }
        guard let first else { return }
        guard first else {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let done: Bool = lifecycle.withLock { l in
                    guard case .closing(var waiters) = l.phase else { return true }
                    waiters.append(c)
                    l.phase = .closing(waiters)
                    return false
                }
                if done { c.resume() }
            }
            return
        }

        await pipe.close()
        let (device, detached) = lifecycle.withLock { ($0.device, $0.detachedDriver) }
        if let device {
            do {
                try device.releaseInterface(interfaceNumber)
            } catch {
                if error.code.disconnectReason == nil {
                    logger.warning("session '\(name)': cannot release interface \(interfaceNumber): \(error)")
                }
            }
            if detached {
                do {
                    try device.attachKernelDriver(interface: interfaceNumber)
                } catch {
                    if error.code.disconnectReason == nil {
                        logger.warning("session '\(name)': cannot attach the kernel driver to interface \(interfaceNumber) again: \(error)")
                    }
                }
            }
        }
        pipe.releaseTransfers()
        await manager.sessionDidClose(self)
        let waiters: [CheckedContinuation<Void, Never>] = lifecycle.withLock { l in
            l.device = nil  // the last reference: libusb_close, here, off the event thread
            defer { l.phase = .closed }
            if case .closing(let waiters) = l.phase { return waiters }
            return []
        }
        logger.debug("session '\(name)' closed")
        for c in waiters { c.resume() }
    }
}

/// The manager's record of an open session.
struct SessionEntry {
    /// The user's handle, while anyone holds it.
    weak var handle: AccessorySession?
    let resources: SessionResources
}

extension SessionEntry: SessionRecord {
    var name: String { resources.name }
    var interfaceNumber: UInt8 { resources.interfaceNumber }
}
