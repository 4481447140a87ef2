import AccessoryCore

extension AccessoryManager {
    private typealias AOA = AndroidOpenAccessory

    /// Switches an Android phone into accessory mode (Android Open Accessory 2) and returns
    /// the accessory it becomes once it has re-enumerated: 18d1:2d00–2d05 on the same port
    /// at a new address, a new connection whose `Accessory.previousConnectionID` names the
    /// phone's. Its interface 0 speaks `ProtocolRule.androidAccessoryProtocol`.
    ///
    /// The sequence is the one real hosts use: GET_PROTOCOL (51; the phone must say 1 or 2),
    /// SEND_STRING (52) for the six strings, then START (53), each with a 1 s timeout. A
    /// phone that drops off the bus during START's status stage may fail START (NO_DEVICE,
    /// EPROTO, a STALL, a timeout): the switch waits for it all the same. It runs on the
    /// manager, never inside a hotplug callback (where libusb answers BUSY, libusb #408). A
    /// phone already in accessory mode is returned as it is.
    ///
    /// - Parameters:
    ///   - phone: the phone, connected in its own mode (or already in accessory mode).
    ///   - identity: what the accessory says it is: the six AOA strings.
    ///   - wait: how long to wait for the phone to come back in accessory mode.
    /// - Throws: ``AccessoryError``: `.protocolNotSupported` when the device is not an AOA
    ///   device (GET_PROTOCOL stalls) or says protocol version 0; `.timeout` when it does not
    ///   come back within `wait`, or START's own error (`.stall`, `.io`, `.timeout`) when
    ///   START failed and it did not come back either; `.accessDenied` naming the udev rule
    ///   that fixes it; `.notFound` when it is no longer connected; `.io` for a string over
    ///   255 bytes; `.cancelled`; `.invalidArgument`, before anything is sent, for a `wait`
    ///   outside 0...49.7 days.
    public func switchToAccessoryMode(
        _ phone: Accessory, identity: AndroidAccessoryIdentity, wait: Duration = .seconds(10)
    ) async throws(AccessoryError) -> Accessory {
        let operation = "Android Open Accessory"
        try ArgumentCheck.check(wait, in: .zero...ArgumentCheck.longestInterval, "wait", operation: operation)
        let label = AccessorySession.label(phone)
        let d = phone.descriptor
        if d.vendor == AOA.vendor, let product = d.product, AOA.accessoryProducts.contains(product) { return phone }
        let payloads = try identity.payloads()
        let device: any USBDeviceConnection
        do {
            device = try openForControl(phone, operation: operation)
        } catch where error.code == .accessDenied {
            let mode = (try? UdevRule.androidAccessory())?.installHint ?? ""
            throw AccessoryError(
                .accessDenied, error.message + "; and, to open the phone in accessory mode afterwards: " + mode, operation: operation,
                rawValue: error.rawValue)
        }
        let timeout = Duration.seconds(1)

        let version: [UInt8]
        do {
            version = try await transfer(
                device, ControlRequest(.vendor, request: AOA.getProtocol), .receive(2), timeout: timeout, id: phone.connectionID)
        } catch where error.code == .stall {
            throw AccessoryError(
                .protocolNotSupported,
                "accessory \(label) is not an Android Open Accessory device: it refused GET_PROTOCOL (51)",
                operation: operation)
        }
        let protocolVersion = version.count == 2 ? Int(version[0]) | Int(version[1]) << 8 : 0
        guard protocolVersion >= 1 else {
            throw AccessoryError(
                .protocolNotSupported,
                "accessory \(label) answered GET_PROTOCOL (51) with version \(protocolVersion); Android Open Accessory needs 1 or 2",
                operation: operation)
        }
        for (index, payload) in payloads.enumerated() {
            _ = try await transfer(
                device, ControlRequest(.vendor, request: AOA.sendString, index: UInt16(index)), .send(payload), timeout: timeout,
                id: phone.connectionID)
        }
        // Listen before START: the phone may be back before START's completion is seen.
        let events = self.events(includingCurrent: false)
        // The mark that links the phone's successor to it lasts as long as this wait.
        expectModeSwitch(of: phone.connectionID, for: timeout + wait)
        defer { endModeSwitch(of: phone.connectionID) }
        // A phone that drops off during START's status stage may answer NO_DEVICE, EPROTO, a
        // STALL or nothing at all: whatever it says, it may be on its way back, so wait.
        var startError: AccessoryError?
        do {
            _ = try await device.controlTransfer(ControlRequest(.vendor, request: AOA.start), .send([]), timeout: timeout)
        } catch where error.code == .cancelled {
            throw error
        } catch where error.code.disconnectReason == nil {
            startError = error
        } catch {
            // Gone already: some phones detach before the status stage completes.
        }
        let failure = startError.map { " (START failed: \($0.message))" } ?? ""
        configuration.logger.debug(
            "sent START to \(label) (AOA version \(protocolVersion))\(failure); waiting for accessory mode on \(d.port)")
        let clock = configuration.clock
        let outcome: SwitchWait = await withTaskGroup(of: SwitchWait.self) { group in
            group.addTask {
                for await event in events {
                    guard case .connected(let a) = event, a.descriptor.bus == d.bus, a.descriptor.port == d.port,
                        a.descriptor.vendor == AOA.vendor, let product = a.descriptor.product, AOA.accessoryProducts.contains(product)
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
        let found: Accessory
        switch outcome {
        case .found(let a):
            found = a
        case .clockFailed(var error):
            error.operation = operation
            throw error
        case .waitEnded:
            if Task.isCancelled {
                throw AccessoryError(.cancelled, "the switch of \(label) into accessory mode was cancelled", operation: operation)
            }
            if let startError {
                throw AccessoryError(
                    startError.code,
                    "accessory \(label): START (53) failed with \(startError.message), and no accessory-mode device (18d1:2d00–2d05) appeared on port \(d.port) within \(wait)",
                    operation: operation, rawValue: startError.rawValue)
            }
            throw AccessoryError(
                .timeout,
                "accessory \(label) did not come back in accessory mode (18d1:2d00–2d05) on port \(d.port) within \(wait)",
                operation: operation)
        }
        return found
    }

    /// How the wait for a phone in accessory mode ended.
    private enum SwitchWait: Sendable {
        case found(Accessory)
        case waitEnded
        case clockFailed(AccessoryError)
    }
}
