import AccessoryCore

extension AccessoryManager {
    /// Reads up to `length` bytes with a control request (device to host).
    ///
    /// `length` is at most 4,096, Linux usbfs's limit for one control transfer. A `timeout`
    /// longer than libusb's longest (2^32 − 1 ms, about 49.7 days) waits forever.
    ///
    /// A device- or other-recipient request needs no claimed interface. An interface- or
    /// endpoint-recipient request claims its interface for the transfer, or goes through
    /// the session of this process that holds it.
    ///
    /// The transfer is asynchronous: no thread blocks while the device answers, and
    /// cancelling the task cancels the transfer.
    ///
    /// - Throws: ``AccessoryError``: `.stall` when the device refuses the request; `.timeout`;
    ///   `.cancelled`; `.notFound` when the accessory is no longer connected; `.busy` when
    ///   another process holds the interface; `.accessDenied` naming the udev rule that fixes
    ///   it; `.accessoryDisconnected` when the device is gone; `.invalidArgument`, before
    ///   anything is sent, for a length outside 0...4096 or a negative timeout.
    public func controlTransfer(
        from accessory: Accessory, _ request: ControlRequest, length: Int, timeout: Duration = .seconds(1)
    ) async throws(AccessoryError) -> [UInt8] {
        try await control(accessory, request, .receive(length), timeout: timeout)
    }

    /// Sends `data` (possibly nothing, at most 4,096 bytes) with a control request (host to
    /// device). See ``controlTransfer(from:_:length:timeout:)`` for limits, claims,
    /// cancellation and errors.
    public func controlTransfer(
        to accessory: Accessory, _ request: ControlRequest, data: [UInt8] = [], timeout: Duration = .seconds(1)
    ) async throws(AccessoryError) {
        _ = try await control(accessory, request, .send(data), timeout: timeout)
    }

    /// Resets the accessory's device (`libusb_reset_device`, a USB port reset). A device
    /// whose descriptors are unchanged keeps its connection; one that re-enumerates within
    /// 10 s comes back as a new connection whose `Accessory.previousConnectionID` names
    /// this one.
    ///
    /// - Throws: `.busy` while a session of this process is open on the accessory (close it
    ///   first); otherwise as ``controlTransfer(from:_:length:timeout:)``.
    public func reset(_ accessory: Accessory) async throws(AccessoryError) {
        let operation = "reset"
        let label = AccessorySession.label(accessory)
        if let open = sessions.sessions(on: accessory.connectionID).first {
            throw AccessoryError(
                .busy, "session '\(open.name)' is open on accessory \(label); close it before a reset", operation: operation)
        }
        let device = try openForControl(accessory, operation: operation)
        tracker.expectModeSwitch(of: accessory.connectionID, until: host.uptime().monotonic + .seconds(10))
        do {
            try device.reset()
        } catch where error.code == .notFound {
            // libusb: the device re-enumerated (its descriptors changed); the hotplug events
            // and the link follow.
            logger.debug("reset of \(label): the device re-enumerated")
        } catch {
            // Gone: it may be on its way back, so the mark stays until its deadline.
            if error.code.disconnectReason != nil {
                reportNoDevice(accessory.connectionID, operation: operation)
            } else {
                tracker.endModeSwitch(of: accessory.connectionID)
            }
            throw error
        }
        tracker.expectChange(onPort: accessory.descriptor.port, at: host.uptime().monotonic)
        arm()
    }

    /// One control transfer on a connected accessory, through a session's claim or a device
    /// opened for it.
    func control(
        _ accessory: Accessory, _ request: ControlRequest, _ data: ControlData, timeout: Duration
    ) async throws(AccessoryError) -> [UInt8] {
        let operation = controlOperation(request, isIn: data.isIn)
        try ArgumentCheck.controlLength(data.length, operation: operation)
        _ = try ArgumentCheck.timeout(timeout, operation: operation)
        let id = accessory.connectionID
        let interface = request.interfaceToClaim { endpoint in
            deviceInfo(for: id)?.configuration?.interfaces.first { $0.endpoints.contains { $0.address == endpoint } }?.number
        }
        if request.recipient == .endpoint, interface == nil {
            throw AccessoryError(
                .notFound, "accessory \(AccessorySession.label(accessory)) has no endpoint \(hexByte(UInt8(request.index & 0xff)))",
                operation: operation)
        }
        // A session of ours that holds the interface lends its claim.
        let call: ControlCall
        if let interface, let held = sessions.session(on: id, interface: interface), let device = held.resources.device {
            call = ControlCall(device: device, claim: nil, accessory: accessory, manager: self)
        } else {
            call = ControlCall(device: try openForControl(accessory, operation: operation), claim: interface, accessory: accessory, manager: self)
        }
        return try await call(request, data, timeout: timeout)
    }

    /// Opens a connected accessory's device for control requests. ACCESS says which udev
    /// rule fixes it.
    func openForControl(_ accessory: Accessory, operation: String) throws(AccessoryError) -> any USBDeviceConnection {
        let label = AccessorySession.label(accessory)
        guard let info = deviceInfo(for: accessory.connectionID) else {
            throw Self.notConnected(accessory, operation: operation)
        }
        do {
            return try openDevice(accessory.connectionID)
        } catch where error.code == .accessDenied {
            let hint = info.descriptor.vendor.flatMap { try? UdevRule(vendor: $0, product: info.descriptor.product) }?.installHint ?? ""
            throw AccessoryError(
                .accessDenied, "no permission to open \(info.devicePath ?? "the device node") of accessory \(label); install a udev rule: \(hint)",
                operation: operation, rawValue: error.rawValue)
        }
    }
}
