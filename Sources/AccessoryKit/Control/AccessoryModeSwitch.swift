import AccessoryCore
import Logging

/// One Android Open Accessory 2 switch of a phone already opened for control requests: the
/// handshake (GET_PROTOCOL, SEND_STRING, START), then the wait for the phone to come back in
/// accessory mode on its port. The manager opens the phone, marks the mode switch and
/// listens; this does the requests and the wait.
struct AccessoryModeSwitch: Sendable {
    private typealias AOA = AndroidOpenAccessory

    let phone: Accessory
    let device: any USBDeviceConnection
    /// How long to wait for the phone in accessory mode.
    let wait: Duration
    let clock: any Clock<Duration>
    let logger: Logger
    /// Sends one request to the phone, as the manager's control requests do (an error names
    /// the request; a NO_DEVICE reaches the manager).
    let send: @Sendable (ControlRequest, ControlData) async throws(AccessoryError) -> [UInt8]

    static let operation = "Android Open Accessory"
    /// Each request's timeout.
    static let timeout = Duration.seconds(1)

    private var label: String { AccessorySession.label(phone) }

    /// Whether `accessory` is a phone in accessory mode: 18d1:2d00–2d05.
    static func isInAccessoryMode(_ accessory: Accessory) -> Bool {
        let d = accessory.descriptor
        return d.vendor == AOA.vendor && d.product.map(AOA.accessoryProducts.contains) == true
    }

    /// GET_PROTOCOL, then the six strings. Returns the protocol version the phone speaks.
    func negotiate(_ payloads: [[UInt8]]) async throws(AccessoryError) -> Int {
        let version: [UInt8]
        do {
            version = try await send(ControlRequest(.vendor, request: AOA.getProtocol), .receive(2))
        } catch where error.code == .stall {
            throw AccessoryError(
                .protocolNotSupported, "accessory \(label) is not an Android Open Accessory device: it refused GET_PROTOCOL (51)",
                operation: Self.operation)
        }
        let protocolVersion = version.count == 2 ? Int(version[0]) | Int(version[1]) << 8 : 0
        guard protocolVersion >= 1 else {
            throw AccessoryError(
                .protocolNotSupported,
                "accessory \(label) answered GET_PROTOCOL (51) with version \(protocolVersion); Android Open Accessory needs 1 or 2",
                operation: Self.operation)
        }
        for (index, payload) in payloads.enumerated() {
            _ = try await send(ControlRequest(.vendor, request: AOA.sendString, index: UInt16(index)), .send(payload))
        }
        return protocolVersion
    }

    /// Sends START, then waits for the phone on its port in accessory mode, watching
    /// `events` (subscribed before START: the phone may be back before START's completion).
    func start(version: Int, watching events: AsyncStream<AccessoryEvent>) async throws(AccessoryError) -> Accessory {
        // A phone that drops off during START's status stage may answer NO_DEVICE, EPROTO, a
        // STALL or nothing at all: whatever it says, it may be on its way back, so wait.
        var startError: AccessoryError?
        do {
            _ = try await device.controlTransfer(ControlRequest(.vendor, request: AOA.start), .send([]), timeout: Self.timeout)
        } catch where error.code == .cancelled {
            throw error
        } catch where error.code.disconnectReason == nil {
            startError = error
        } catch {
            // Gone already: some phones detach before the status stage completes.
        }
        let port = phone.descriptor.port
        let failure = startError.map { " (START failed: \($0.message))" } ?? ""
        logger.debug("sent START to \(label) (AOA version \(version))\(failure); waiting for accessory mode on \(port)")
        switch await comeBack(events) {
        case .found(let accessory):
            return accessory
        case .clockFailed(var error):
            error.operation = Self.operation
            throw error
        case .waitEnded:
            if Task.isCancelled {
                throw AccessoryError(.cancelled, "the switch of \(label) into accessory mode was cancelled", operation: Self.operation)
            }
            if let startError {
                throw AccessoryError(
                    startError.code,
                    "accessory \(label): START (53) failed with \(startError.message), and no accessory-mode device (18d1:2d00–2d05) appeared on port \(port) within \(wait)",
                    operation: Self.operation, rawValue: startError.rawValue)
            }
            throw AccessoryError(
                .timeout, "accessory \(label) did not come back in accessory mode (18d1:2d00–2d05) on port \(port) within \(wait)",
                operation: Self.operation)
        }
    }

    /// The first accessory-mode connect on the phone's bus and port, or the end of the wait.
    private func comeBack(_ events: AsyncStream<AccessoryEvent>) async -> Outcome {
        let (bus, port, wait, clock) = (phone.descriptor.bus, phone.descriptor.port, wait, clock)
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await event in events {
                    guard case .connected(let a) = event, a.descriptor.bus == bus, a.descriptor.port == port,
                        Self.isInAccessoryMode(a)
                    else { continue }
                    return .found(a)
                }
                return .waitEnded
            }
            group.addTask {
                do {
                    try await clock.sleep(for: wait)
                } catch let error as AccessoryError {
                    // A clock that cannot move (a simulation nobody advances) says so.
                    return .clockFailed(error)
                } catch {}
                return .waitEnded
            }
            let first = await group.next() ?? .waitEnded
            group.cancelAll()
            return first
        }
    }

    /// How the wait for a phone in accessory mode ended.
    private enum Outcome: Sendable {
        case found(Accessory)
        case waitEnded
        case clockFailed(AccessoryError)
    }
}
