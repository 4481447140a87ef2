import AccessoryCore
import AccessoryKit
import Dispatch
import AccessoryLocking

/// The device side of an opened simulated device's bulk and interrupt endpoints: one queue
/// of pending transfers per endpoint, in submission order, whoever submitted them (a
/// stream's or a call's ``SimulatedEndpointTransfers``), as a host controller keeps them.
///
/// A serial event queue moves the transfers on, as libusb's event thread would see them
/// complete: the transfer at the head of each endpoint's queue is put to the accessory's
/// ``SimulatedResponder`` once, and its ``SimulatedTransfer/Answer`` completes it, halts the
/// endpoint, or holds it (and everything behind it) until data is queued, a delay on the
/// virtual clock passes, or the host's timeout or cancellation ends it. A cancelled or
/// timed-out transfer ends at once wherever it waits.
///
/// When the device goes, every pending transfer ends as the kernel ends them (OUT with
/// NO_DEVICE, IN as the unplug says), and every later submit fails with NO_DEVICE.
///
/// A replayed device's transfer that its recording cannot answer is held as stranded; the
/// system's watchdog ends it (``endStranded()``) once nothing else can happen and someone
/// awaits it.
final class SimulatedEndpoints: Sendable {
    /// Who submitted a transfer, and so who is told when it ends.
    struct Owner: Sendable {
        let transfers: SimulatedEndpointTransfers
        let tag: UInt64

        init(_ transfers: SimulatedEndpointTransfers, tag: UInt64) {
            self.transfers = transfers
            self.tag = tag
        }

        func isOwned(by queue: AnyObject) -> Bool { transfers === queue }

        func complete(_ completion: TransferCompletion) { transfers.completed(tag, completion) }
    }

    /// Where a pending transfer is with the accessory.
    private enum Stage: Sendable {
        /// Not yet put to the responder.
        case new
        /// Answered ``SimulatedTransfer/Answer/queued``: waits for data on its endpoint.
        case waitingForData
        /// Answered ``SimulatedTransfer/Answer/never`` or waiting for a delay.
        case held
        /// Answered; the answer is applied at the next step.
        case answered(SimulatedTransfer.Answer)
    }

    private struct Pending: Sendable {
        let serial: UInt64
        let owner: Owner
        /// OUT: the bytes; IN: `nil`.
        let bytes: [UInt8]?
        let length: Int
        var stage = Stage.new
        var cancelled = false
        /// Its timeout passed: it ends with `.timedOut`, or with this error from a clock
        /// nothing moves.
        var expired: TransferStatus?
        var timers: [Task<Void, Never>] = []
        /// Held because the recording cannot answer it.
        var stranding: ReplayScript.Stranding?
    }

    private struct State: Sendable {
        var gone = false
        /// How IN transfers pending when the device went end.
        var inGone = TransferStatus.noDevice
        var halted: Set<UInt8> = []
        /// What the accessory has sent on each IN endpoint that the host has not read yet.
        var queued: [UInt8: [[UInt8]]] = [:]
        var pending: [UInt8: [Pending]] = [:]
        /// The current alternate setting of each interface (0 when absent).
        var alternates: [UInt8: UInt8] = [:]
        var nextSerial: UInt64 = 0
        var pumpScheduled = false
    }

    /// What the event queue does next, outside the lock.
    private enum Step {
        case complete(Owner, TransferCompletion, [Task<Void, Never>])
        case ask(endpoint: UInt8, serial: UInt64, SimulatedTransfer, streamIn: UInt8?)
        case wait(endpoint: UInt8, serial: UInt64, Duration, then: SimulatedTransfer.Answer)
    }

    let node: String
    private let responder: SimulatedResponder
    /// A replayed device's recording, which answers in place of the responder.
    private let replay: ReplayScript?
    private let configuration: USBConfiguration?
    private let system: SimulatedSystem
    private let state = Locked(State())
    private let events = DispatchQueue(label: "accessorytesting.device-events")

    /// The device instance they belong to: while it is wedged, nothing is answered.
    private let instance: UInt64

    init(
        node: String, responder: SimulatedResponder, replay: ReplayScript? = nil, configuration: USBConfiguration?, system: SimulatedSystem,
        instance: UInt64
    ) {
        self.node = node
        self.instance = instance
        self.responder = responder
        self.replay = replay
        self.configuration = configuration
        self.system = system
    }

    var isGone: Bool { state.withLock { $0.gone } }

    /// The responder's handle on these endpoints.
    var context: SimulatedResponder.Context { SimulatedResponder.Context(endpoints: WeakEndpoints(target: self)) }

    // MARK: The host's side

    /// Queues one transfer on `endpoint` (OUT with `bytes`, IN for up to `length` bytes),
    /// ended with `.timedOut` after `timeout` on the virtual clock.
    /// - Returns: the error when it cannot be submitted: the device is gone, or the endpoint
    ///   is not in its interface's current alternate setting.
    func submit(_ endpoint: UInt8, _ owner: Owner, bytes: [UInt8]?, length: Int, timeout: Duration?, operation: String) -> AccessoryError? {
        let submitted: UInt64? = state.withLock { s in
            guard !s.gone, place(of: endpoint, s.alternates) != nil else { return nil }
            s.nextSerial &+= 1
            s.pending[endpoint, default: []].append(Pending(serial: s.nextSerial, owner: owner, bytes: bytes, length: length))
            return s.nextSerial
        }
        guard let serial = submitted else {
            if isGone { return TransferStatus.noDevice.error(operation: operation, device: node) }
            return AccessoryError(
                .io, "\(node) has no \(operation) in its current alternate setting: the submit failed (LIBUSB_ERROR_IO)",
                operation: operation, rawValue: -1)
        }
        if let timeout { startTimeout(timeout, endpoint: endpoint, serial: serial) }
        schedulePump()
        return nil
    }

    /// Cancels the pending transfers `owner` made (with `tag`, only that one): each still
    /// ends, as `.cancelled`.
    func cancel(_ owner: AnyObject, tag: UInt64? = nil) {
        state.withLock { s in
            for (endpoint, list) in s.pending {
                for i in list.indices where list[i].owner.isOwned(by: owner) {
                    if let tag, list[i].owner.tag != tag { continue }
                    s.pending[endpoint]![i].cancelled = true
                }
            }
        }
        schedulePump()
    }

    /// Forgets what `owner` still has pending (nothing, if it waited for its completions).
    func remove(_ owner: AnyObject) {
        state.withLock { s in
            for endpoint in s.pending.keys { s.pending[endpoint]!.removeAll { $0.owner.isOwned(by: owner) } }
        }
    }

    /// Clears a halt on `endpoint`.
    func clearHalt(_ endpoint: UInt8) {
        state.withLock { _ = $0.halted.remove(endpoint) }
        schedulePump()
    }

    /// SET_INTERFACE: the interface's endpoints lose their halts. `false` when the interface
    /// has no such setting.
    func selectAlternate(_ alternate: UInt8, interface number: UInt8) -> Bool {
        guard let interface = configuration?.interface(number, alternate: alternate) else { return false }
        state.withLock { s in
            s.alternates[number] = alternate
            for e in interface.endpoints { s.halted.remove(e.address) }
        }
        schedulePump()
        return true
    }

    /// The device left: every transfer pending now ends (IN ones with `inStatus`), and every
    /// later submit fails with NO_DEVICE.
    func deviceGone(inStatus: TransferStatus) {
        state.withLock { s in
            guard !s.gone else { return }
            s.gone = true
            s.inGone = inStatus
        }
        schedulePump()
    }

    // MARK: The accessory's side

    /// Queues a chunk on IN `endpoint` (see ``SimulatedResponder/Context/queue(_:on:)``).
    func queue(_ bytes: [UInt8], on endpoint: UInt8) {
        state.withLock { $0.queued[endpoint, default: []].append(bytes) }
        schedulePump()
    }

    /// The interface that holds `endpoint` in its current setting, and that interface.
    private func place(of endpoint: UInt8, _ alternates: [UInt8: UInt8]) -> USBInterface? {
        configuration?.interfaces.first { i in
            i.alternate == (alternates[i.number] ?? 0) && i.endpoints.contains { $0.address == endpoint }
        }
    }

    // MARK: The event queue

    func schedulePump() {
        let first = state.withLock { s in
            defer { s.pumpScheduled = true }
            return !s.pumpScheduled
        }
        guard first else { return }
        // Counted until it ends, so that the simulation waits for the completions before it
        // moves on (the news they post to a manager is counted from its posting on).
        system.begin(.delivery)
        events.async {
            self.pump()
            self.system.end(.delivery)
        }
    }

    /// Moves every transfer on as far as it can go. Runs on ``events`` only.
    private func pump() {
        state.withLock { $0.pumpScheduled = false }
        var moved = true
        while moved {
            moved = false
            for endpoint in state.withLock({ $0.pending.keys.sorted() }) {
                while let step = state.withLock({ nextStep(endpoint, &$0) }) {
                    moved = true
                    perform(step)
                }
            }
        }
    }

    private func perform(_ step: Step) {
        switch step {
        case .complete(let owner, let completion, let timers):
            for t in timers { t.cancel() }
            owner.complete(completion)
        case .ask(let endpoint, let serial, let transfer, let streamIn):
            system.noteActivity()
            // A wedged device answers nothing: the transfer waits for its timeout.
            let (answer, stranding): (SimulatedTransfer.Answer, ReplayScript.Stranding?) =
                system.isWedged(instance: instance)
                ? (.never, nil) : replay?.respond(transfer) ?? (responder.answer(transfer, streamIn: streamIn, context), nil)
            update(endpoint, serial) { p in
                p.stage = .answered(answer)
                p.stranding = stranding
            }
            if stranding != nil { system.noteStranded(self) }
        case .wait(let endpoint, let serial, let delay, let answer):
            let deadline = system.now + delay
            let timer = Task { [weak self, system] in
                var next = answer
                do {
                    try await system.sleep(until: deadline)
                } catch let stalled as AccessoryError {
                    next = .error(stalled)  // a clock nothing moves: the call says so
                } catch {
                    return
                }
                self?.update(endpoint, serial) { $0.stage = .answered(next) }
                self?.schedulePump()
            }
            update(endpoint, serial) { $0.timers.append(timer) }
        }
    }

    // MARK: Stranded transfers

    /// How many stranded transfers are pending, and how many of them someone awaits.
    func strandedCount() -> (stranded: Int, awaited: Int) {
        let owners = state.withLock { s in s.pending.values.flatMap { $0.filter { $0.stranding != nil }.map(\.owner) } }
        // Asked outside the lock: the checks take the sessions' locks.
        return (owners.count, owners.filter(\.transfers.isAwaited).count)
    }

    /// Ends the stranded transfers someone awaits, each with its error (``ReplayScript/ended(_:)``).
    /// - Returns: how many it ended.
    func endStranded() -> Int {
        let stranded = state.withLock { s in
            s.pending.flatMap { endpoint, list in list.filter { $0.stranding != nil }.map { (endpoint, $0.serial, $0.owner) } }
        }
        var ended = 0
        for (endpoint, serial, owner) in stranded where owner.transfers.isAwaited {
            update(endpoint, serial) { p in
                guard let stranding = p.stranding, let replay else { return }
                p.stranding = nil
                p.stage = .answered(.error(replay.ended(stranding)))
                ended += 1
            }
        }
        if ended > 0 { schedulePump() }
        return ended
    }

    /// Changes the pending transfer `serial` on `endpoint`, if it is still there.
    private func update(_ endpoint: UInt8, _ serial: UInt64, _ change: (inout Pending) -> Void) {
        state.withLock { s in
            guard let i = s.pending[endpoint]?.firstIndex(where: { $0.serial == serial }) else { return }
            change(&s.pending[endpoint]![i])
        }
    }

    private func startTimeout(_ timeout: Duration, endpoint: UInt8, serial: UInt64) {
        let deadline = system.now + timeout
        let timer = Task { [weak self, system] in
            var status = TransferStatus.timedOut
            do {
                try await system.sleep(until: deadline)
            } catch let stalled as AccessoryError {
                status = .failed(stalled)
            } catch {
                return
            }
            self?.update(endpoint, serial) { $0.expired = status }
            self?.schedulePump()
        }
        update(endpoint, serial) { $0.timers.append(timer) }
    }

    /// What to do next on `endpoint`, under the lock: end a cancelled or timed-out call
    /// wherever it waits, else move the head on; `nil` when nothing can move.
    private func nextStep(_ endpoint: UInt8, _ s: inout State) -> Step? {
        guard var list = s.pending[endpoint], !list.isEmpty else { return nil }
        let isIn = endpoint & 0x80 != 0
        func end(_ i: Int, _ status: TransferStatus, data: [UInt8] = [], length: Int = 0) -> Step {
            let p = list.remove(at: i)
            s.pending[endpoint] = list
            return .complete(p.owner, TransferCompletion(status: status, data: data, length: length), p.timers)
        }
        if let i = list.indices.dropFirst().first(where: { list[$0].cancelled || list[$0].expired != nil }) {
            return end(i, list[i].expired ?? .cancelled)
        }
        let head = list[0]
        if head.cancelled { return end(0, .cancelled) }
        if let expired = head.expired { return end(0, expired) }
        if s.gone { return end(0, isIn ? s.inGone : .noDevice) }
        if s.halted.contains(endpoint) { return end(0, .stall) }
        switch head.stage {
        case .new:
            let interface = place(of: endpoint, s.alternates)
            let type = interface?.endpoints.first { $0.address == endpoint }?.transferType
            let transfer = SimulatedTransfer(
                kind: type == .interrupt ? .interrupt : .bulk, endpoint: endpoint, interface: interface.map { Int($0.number) },
                data: head.bytes ?? [], length: head.length)
            let streamIn = interface.flatMap { i in
                i.endpoints.first { $0.direction == .in && $0.transferType == .bulk }
                    ?? i.endpoints.first { $0.direction == .in && $0.transferType == .interrupt }
            }?.address
            list[0].stage = .held  // until the answer is in
            s.pending[endpoint] = list
            return .ask(endpoint: endpoint, serial: head.serial, transfer, streamIn: streamIn)
        case .held:
            return nil
        case .waitingForData:
            // Up to the transfer's length from the oldest chunk; the rest waits.
            guard var chunks = s.queued[endpoint], !chunks.isEmpty else { return nil }
            let chunk = chunks[0]
            let take = min(chunk.count, head.length)
            if take < chunk.count { chunks[0] = Array(chunk[take...]) } else { chunks.removeFirst() }
            s.queued[endpoint] = chunks
            return end(0, .completed, data: Array(chunk[..<take]), length: take)
        case .answered(let answer):
            switch answer {
            case .data(let bytes) where isIn:
                if bytes.count > head.length { return end(0, .overflow, length: head.length) }
                return end(0, .completed, data: bytes, length: bytes.count)
            case .data, .accept, .queued:
                if case .queued = answer, isIn {
                    list[0].stage = .waitingForData
                    s.pending[endpoint] = list
                    return nextStep(endpoint, &s)
                }
                return end(0, .completed, length: isIn ? 0 : head.length)
            case .stall:
                s.halted.insert(endpoint)
                return end(0, .stall)
            case .failure(let failure):
                switch failure {
                case .protocolError: return end(0, .error)
                case .noDevice: return end(0, .noDevice)
                case .overflow: return end(0, .overflow, length: head.length)
                }
            case .error(let error):
                return end(0, .failed(error))
            case .never:
                list[0].stage = .held
                s.pending[endpoint] = list
                return nil
            case .after(let delay, let next):
                list[0].stage = .held
                s.pending[endpoint] = list
                return .wait(endpoint: endpoint, serial: head.serial, delay, then: next)
            }
        }
    }
}

/// A reference to ``SimulatedEndpoints`` that does not keep them alive.
struct WeakEndpoints: Sendable {
    weak let target: SimulatedEndpoints?
}
