import AccessoryCore

extension AccessoryManager {
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
        let operation = AccessoryModeSwitch.operation
        try ArgumentCheck.check(wait, in: .zero...ArgumentCheck.longestInterval, "wait", operation: operation)
        if AccessoryModeSwitch.isInAccessoryMode(phone) { return phone }
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
        let id = phone.connectionID
        let call = ControlCall(device: device, claim: nil, accessory: phone, manager: self)
        let modeSwitch = AccessoryModeSwitch(
            phone: phone, device: device, wait: wait, clock: configuration.clock, logger: logger,
            send: { request, data throws(AccessoryError) in try await call(request, data, timeout: AccessoryModeSwitch.timeout) })
        let version = try await modeSwitch.negotiate(payloads)
        // Listen before START: the phone may be back before START's completion is seen.
        let events = self.events(includingCurrent: false)
        // The mark that links the phone's successor to it lasts as long as this wait.
        tracker.expectModeSwitch(of: id, until: host.uptime().monotonic + AccessoryModeSwitch.timeout + wait)
        defer { tracker.endModeSwitch(of: id) }
        return try await modeSwitch.start(version: version, watching: events)
    }
}
