import AccessoryCore
import AccessoryKit
import AccessoryLocking

/// An opened simulated device. Its bulk and interrupt endpoints are a
/// ``SimulatedEndpoints``, whose event queue completes their transfers as libusb's event
/// thread does, with the accessory's ``SimulatedResponder`` answering them; control requests
/// are answered on the calling task (the device's standard GET_STATUS by the device itself,
/// unless a recording answers). A wedged device answers nothing: its transfers and requests
/// wait for their timeouts. When the device is unplugged, the pending transfers end as the
/// kernel ends them (OUT with NO_DEVICE, IN with a transfer error, as ESHUTDOWN and EPROTO),
/// and every later call throws that the device is gone (NO_DEVICE).
final class SimulatedDeviceConnection: USBDeviceConnection {
    let node: String
    private let responder: SimulatedResponder
    private let androidRole: SimulatedAccessory.AndroidRole?
    private let startAnswer: SimulatedAccessory.StartAnswer
    private let system: SimulatedSystem
    private let instance: UInt64
    private let configuration: USBConfiguration?
    private let endpoints: SimulatedEndpoints
    private let claimed = Locked<Set<UInt8>>([])
    /// Whether a recording answers for it (the device's GET_STATUS too, as recorded).
    private let replays: Bool

    init(system: SimulatedSystem, device: SimulatedSystem.Device) throws(AccessoryError) {
        guard let accessory = device.accessory, let address = device.info.descriptor.address else {
            throw AccessoryError(
                .io, "the device on \(device.info.descriptor.port) comes from a trace: it has no accessory to open", operation: "open")
        }
        self.system = system
        self.instance = device.instance
        self.responder = accessory.responder
        self.androidRole = accessory.androidRole
        self.startAnswer = accessory.startAnswer
        self.configuration = device.info.configuration
        self.replays = accessory.replay != nil
        self.node = "bus \(device.info.descriptor.bus) address \(address)"
        let endpoints = SimulatedEndpoints(
            node: node, responder: accessory.responder, replay: accessory.replay, configuration: configuration, system: system,
            instance: device.instance)
        self.endpoints = endpoints
        guard system.watch(instance: device.instance, { [weak endpoints] inStatus in endpoints?.deviceGone(inStatus: inStatus) }) else {
            throw goneError("open")
        }
    }

    var isGone: Bool { endpoints.isGone }

    private func goneError(_ operation: String) -> AccessoryError {
        .noDevice(operation: operation, device: node)
    }

    private func checkPresent(_ operation: String) throws(AccessoryError) {
        if isGone { throw goneError(operation) }
    }

    // MARK: USBDeviceConnection

    func claimInterface(_ number: UInt8) throws(AccessoryError) {
        try checkPresent("claim interface \(number)")
        guard system.claim(instance: instance, interface: number) else {
            throw AccessoryError(.busy, "interface \(number) is claimed by another connection", operation: "claim interface \(number)")
        }
        claimed.withLock { _ = $0.insert(number) }
    }

    func releaseInterface(_ number: UInt8) throws(AccessoryError) {
        let held = claimed.withLock { $0.remove(number) != nil }
        if held { system.release(instance: instance, interface: number) }
        try checkPresent("release interface \(number)")
    }

    /// SET_INTERFACE: refused (as usbfs refuses it, EINVAL) for a setting the interface does
    /// not have.
    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {
        let operation = "set interface \(number) alternate setting \(alternate)"
        try checkPresent(operation)
        guard endpoints.selectAlternate(alternate, interface: number) else {
            throw AccessoryError(.io, "\(operation) failed on \(node): LIBUSB_ERROR_IO", operation: operation, rawValue: -1)
        }
    }

    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool {
        try checkPresent("query the kernel driver of interface \(number)")
        return false
    }

    func detachKernelDriver(interface number: UInt8) throws(AccessoryError) {
        try checkPresent("detach the kernel driver of interface \(number)")
    }

    func attachKernelDriver(interface number: UInt8) throws(AccessoryError) {
        try checkPresent("attach the kernel driver of interface \(number)")
    }

    func clearHalt(endpoint: UInt8) throws(AccessoryError) {
        try checkPresent("clear halt 0x\(String(endpoint, radix: 16))")
        endpoints.clearHalt(endpoint)
    }

    /// A port reset: the device stays in place, and a wedge a reset cures is gone (the
    /// transfers it left waiting still wait for their timeouts).
    func reset() throws(AccessoryError) {
        try checkPresent("reset")
        system.cure(instance: instance, by: .reset)
    }

    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration? { configuration }

    func makeEndpointTransfers(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int
    ) throws(AccessoryError) -> any EndpointTransfers {
        SimulatedEndpointTransfers(endpoints: endpoints, endpoint: endpoint, type: type)
    }

    /// A control request goes to the accessory's Android Open Accessory part when it plays
    /// a phone, else to its responder. One over Linux usbfs's limit is refused with the
    /// error the real host gives. A delay in the answer passes on the virtual clock; one that
    /// never comes ends with `.timeout` once `timeout` has passed there.
    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        let operation = controlOperation(request, isIn: data.isIn)
        try ArgumentCheck.controlLength(data.length, operation: operation)
        let limit = try ArgumentCheck.timeout(timeout, operation: operation)
        try checkPresent(operation)
        let outData: [UInt8]? = if case .send(let bytes) = data { bytes } else { nil }
        var answer: SimulatedTransfer.Answer
        if system.isWedged(instance: instance) {
            answer = .never
        } else if !replays, Self.isDeviceStatus(request, isIn: data.isIn) {
            answer = .data([0, 0])  // chapter 9: every device answers it, as accessory-sim's do
        } else if let role = androidRole, let reply = system.androidControl(instance: instance, role: role, request, outData) {
            answer = switch reply {
            case .accept: .accept
            case .data(let bytes): .data(bytes)
            case .stall: .stall
            }
            if role == .phone, reply == .accept, SimulatedSystem.isStart(request, outData) { try startFailure(operation) }
        } else {
            let transfer = SimulatedTransfer(
                kind: .control, endpoint: data.isIn ? 0x80 : 0x00, data: outData ?? [], length: data.length, setup: request)
            answer = responder.answer(transfer, streamIn: nil, endpoints.context)
        }
        system.noteActivity()
        while true {
            switch answer {
            case .accept, .queued:
                return []
            case .data(let bytes):
                return data.isIn ? Array(bytes.prefix(data.length)) : []
            case .stall:
                throw AccessoryError(.stall, "\(node) refused the request (STALL)", operation: operation)
            case .failure(.noDevice):
                throw goneError(operation)
            case .failure(.protocolError):
                throw AccessoryError(.io, "the control transfer on \(node) failed (EPROTO)", operation: operation, rawValue: -1)
            case .failure(.overflow):
                throw AccessoryError(.overflow, "\(node) sent more data than asked for", operation: operation)
            case .error(let error):
                throw error
            case .never:
                try await sleep(limit ?? ArgumentCheck.longestTimeout, operation)
                throw AccessoryError(.timeout, "\(node) did not answer within \(timeout)", operation: operation)
            case .after(let delay, let next):
                try await sleep(delay, operation)
                try checkPresent(operation)
                answer = next
            }
        }
    }

    /// Whether `request` is the standard GET_STATUS of the device, which the device answers
    /// itself (bus-powered, no remote wakeup) rather than its responder.
    static func isDeviceStatus(_ request: ControlRequest, isIn: Bool) -> Bool {
        isIn && request.kind == .standard && request.recipient == .device && request.request == 0
    }

    /// Waits `duration` on the virtual clock.
    private func sleep(_ duration: Duration, _ operation: String) async throws(AccessoryError) {
        do {
            try await system.sleep(until: system.now + duration)
        } catch let stalled as AccessoryError {
            throw stalled
        } catch {
            throw AccessoryError(.cancelled, "the control transfer was cancelled", operation: operation)
        }
    }

    /// How START fails on a phone that answers it otherwise than completing.
    private func startFailure(_ operation: String) throws(AccessoryError) {
        switch startAnswer {
        case .completes: return
        case .noDevice: throw goneError(operation)
        case .stall: throw AccessoryError(.stall, "\(node) refused the request (STALL)", operation: operation)
        case .protocolError:
            throw AccessoryError(.io, "the control transfer on \(node) failed (EPROTO)", operation: operation, rawValue: -1)
        case .timeout: throw AccessoryError(.timeout, "\(node) did not complete the request in time", operation: operation, rawValue: -7)
        }
    }
}
