import AccessoryCore
import AccessoryKit
import Dispatch
import Synchronization

/// An opened simulated device. Its endpoints are ``SimulatedEndpointQueue``s whose transfers
/// a serial event queue completes, as libusb's event thread does: each OUT transfer goes to
/// the accessory's ``SimulatedResponder``, whose answers wait on the matching IN endpoint
/// until the host asks for them. When the device is unplugged, the pending transfers end as
/// the kernel ends them (OUT with NO_DEVICE, IN with a transfer error, as ESHUTDOWN and
/// EPROTO), and every later call throws that the device is gone (NO_DEVICE).
final class SimulatedDeviceConnection: USBDeviceConnection {
    let node: String
    private let responder: SimulatedResponder
    private let androidRole: SimulatedAccessory.AndroidRole?
    private let startAnswer: SimulatedAccessory.StartAnswer
    private let system: SimulatedSystem
    private let instance: UInt64
    private let configuration: USBConfiguration?
    private let events = DispatchQueue(label: "accessorytesting.device-events")

    private struct Queues {
        weak var input: SimulatedEndpointQueue?
        weak var output: SimulatedEndpointQueue?
    }

    private struct State {
        var gone = false
        /// How IN transfers pending when the device went end.
        var inGone = TransferStatus.noDevice
        var claimed: Set<UInt8> = []
        var halted: Set<UInt8> = []
        /// What the accessory has sent on each IN endpoint that the host has not read yet.
        var answers: [UInt8: [[UInt8]]] = [:]
        var queues: [UInt8: Queues] = [:]
        var pumpScheduled = false
    }

    private let state = Locked(State())

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
        self.node = "bus \(device.info.descriptor.bus) address \(address)"
        guard system.watch(instance: device.instance, { [weak self] inStatus in self?.deviceGone(inStatus: inStatus) }) else {
            throw goneError("open")
        }
    }

    var isGone: Bool { state.withLock { $0.gone } }

    private func goneError(_ operation: String) -> AccessoryError {
        AccessoryError(
            .accessoryDisconnected(.ghostEvicted(.noDevice(operation: operation))),
            "the device is gone (\(node)): NO_DEVICE", operation: operation)
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
        state.withLock { _ = $0.claimed.insert(number) }
    }

    func releaseInterface(_ number: UInt8) throws(AccessoryError) {
        let held = state.withLock { $0.claimed.remove(number) != nil }
        if held { system.release(instance: instance, interface: number) }
        try checkPresent("release interface \(number)")
    }

    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {
        try checkPresent("set interface \(number) alternate \(alternate)")
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
        state.withLock { _ = $0.halted.remove(endpoint) }
        schedulePump()
    }

    func reset() throws(AccessoryError) {
        try checkPresent("reset")
    }

    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration? { configuration }

    func makeEndpointQueue(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int, transfers: Int, transferSize: Int
    ) throws(AccessoryError) -> any EndpointQueue {
        try checkPresent("open endpoint 0x\(String(endpoint, radix: 16))")
        let queue = SimulatedEndpointQueue(connection: self, endpoint: endpoint, type: type, maxPacketSize: maxPacketSize, capacity: transfers)
        state.withLock { s in
            let pair = endpoint & 0x0f
            if endpoint & 0x80 != 0 { s.queues[pair, default: Queues()].input = queue } else { s.queues[pair, default: Queues()].output = queue }
        }
        return queue
    }

    /// A control request goes to the accessory's Android Open Accessory part when it plays
    /// a phone, else to its responder. One over Linux usbfs's limit is refused with the
    /// error the real host gives.
    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        let operation = controlOperation(request, isIn: data.isIn)
        try ArgumentCheck.controlLength(data.length, operation: operation)
        _ = try ArgumentCheck.timeout(timeout, operation: operation)
        try checkPresent(operation)
        let outData: [UInt8]? = if case .send(let bytes) = data { bytes } else { nil }
        let reply = androidRole.flatMap { role in
            system.androidControl(instance: instance, role: role, request, outData)
        } ?? responder.onControl(request, outData)
        system.noteActivity()
        if androidRole == .phone, reply == .accept, SimulatedSystem.isStart(request, outData) {
            try startFailure(operation)
        }
        switch reply {
        case .stall:
            throw AccessoryError(.stall, "\(node) refused the request (STALL)", operation: operation)
        case .accept:
            return []
        case .data(let bytes):
            return data.isIn ? Array(bytes.prefix(data.length)) : []
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

    // MARK: The event queue

    /// The device left: every transfer pending now ends (IN ones with `inStatus`), and every
    /// later call fails with NO_DEVICE.
    private func deviceGone(inStatus: TransferStatus) {
        state.withLock { s in
            guard !s.gone else { return }
            s.gone = true
            s.inGone = inStatus
        }
        schedulePump()
    }

    func schedulePump() {
        let first = state.withLock { s in
            defer { s.pumpScheduled = true }
            return !s.pumpScheduled
        }
        guard first else { return }
        // Counted until it ends, so that the simulation waits for the completions (and
        // their reports to the manager) before it moves on.
        system.begin(.delivery)
        events.async {
            self.pump()
            self.system.end(.delivery)
        }
    }

    /// Moves every transfer on as far as it can go, completing them in submission order per
    /// endpoint. Runs on ``events`` only.
    private func pump() {
        state.withLock { $0.pumpScheduled = false }
        var moved = true
        while moved {
            moved = false
            let (gone, queues) = state.withLock { ($0.gone, $0.queues) }
            for (pair, q) in queues.sorted(by: { $0.key < $1.key }) {
                if let out = q.output { moved = pumpOut(out, pair: pair, gone: gone) || moved }
                if let input = q.input { moved = pumpIn(input, gone: gone) || moved }
            }
        }
    }

    /// How a transfer ends without the accessory's part: cancelled, the device gone, or the
    /// endpoint halted; `nil` when it goes on.
    private func endsEarly(_ transfer: SimulatedEndpointQueue.Transfer, on endpoint: UInt8, gone: Bool) -> TransferStatus? {
        if transfer.cancelled { return .cancelled }
        if gone { return endpoint & 0x80 != 0 ? state.withLock { $0.inGone } : .noDevice }
        if state.withLock({ $0.halted.contains(endpoint) }) { return .stall }
        return nil
    }

    private func pumpOut(_ queue: SimulatedEndpointQueue, pair: UInt8, gone: Bool) -> Bool {
        var moved = false
        while let transfer = queue.head {
            if let status = endsEarly(transfer, on: queue.endpoint, gone: gone) {
                queue.completeHead(TransferCompletion(status: status, length: 0))
            } else if transfer.ignored {
                return moved
            } else {
                switch responder.onWrite(Int(pair) - 1, transfer.bytes ?? []) {
                case .respond(let chunks):
                    state.withLock { $0.answers[0x80 | pair, default: []].append(contentsOf: chunks) }
                    queue.completeHead(TransferCompletion(status: .completed, length: transfer.length))
                case .stall:
                    state.withLock { _ = $0.halted.insert(queue.endpoint) }
                    queue.completeHead(TransferCompletion(status: .stall, length: 0))
                case .ignore:
                    queue.markHeadIgnored()
                    return moved
                }
            }
            moved = true
        }
        return moved
    }

    private func pumpIn(_ queue: SimulatedEndpointQueue, gone: Bool) -> Bool {
        var moved = false
        while let transfer = queue.head {
            if let status = endsEarly(transfer, on: queue.endpoint, gone: gone) {
                queue.completeHead(TransferCompletion(status: status, length: 0))
            } else {
                // Up to the transfer's length from the oldest answer; the rest waits.
                let data: [UInt8]? = state.withLock { s in
                    guard var pending = s.answers[queue.endpoint], !pending.isEmpty else { return nil }
                    let chunk = pending[0]
                    let take = min(chunk.count, transfer.length)
                    if take < chunk.count { pending[0] = Array(chunk[take...]) } else { pending.removeFirst() }
                    s.answers[queue.endpoint] = pending
                    return Array(chunk[..<take])
                }
                guard let data else { return moved }
                queue.completeHead(TransferCompletion(status: .completed, data: data))
            }
            moved = true
        }
        return moved
    }
}
