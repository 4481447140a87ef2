import AccessoryCapture
import AccessoryCore
import Dispatch
import Glibc
import Logging
import AccessoryLocking

/// Where the manager records every transfer it makes, for `Configuration.capturePath`: a
/// usbmon pcapng file (``USBCaptureWriter``), one `S` and one `C` record per transfer, with
/// URB IDs of its own. A record that cannot be written (a full disk) ends the capture at its
/// last whole record: the error is logged once and kept in ``error``; the transfers go on.
///
/// On a host whose completions come in passes of an event loop (libusb's event thread, see
/// ``batchEventPasses()``), the file is written by a writer thread of its own: a submission's
/// record is queued (not written) by the thread that submits; at the end of each pass the
/// event thread queues the pass's completion records and hands the completions to the
/// writer, which writes everything queued with one `writev(2)` and only then hands the
/// completions on, in order. A completion the caller has seen is in the file all the same.
final class CaptureRecorder: Sendable {
    private let writer: USBCaptureWriter
    private let logger: Logger
    /// The next URB ID, and whether a write has failed (then it is logged once).
    private let state = Locked((nextID: UInt64(1), failed: false))
    /// Whether completions on the event thread wait for the end of its pass.
    private let batchesPasses = Locked(false)
    /// The completions of the current pass, held until their records are written.
    private let deliveries = Locked<[@Sendable () -> Void]>([])
    /// The writer thread: a serial queue, so passes are written, and their completions
    /// handed on, one after another in the order the passes ended. What it shares with the
    /// other threads is behind locks: the held completions are moved out of `deliveries`
    /// under its lock and into the block (`async` is the hand-over); the queued records are
    /// in the writer's `output` lock; and one flush at a time runs under its `writing` lock.
    private let writerQueue = DispatchQueue(label: "AccessoryKit.capture-writer")

    /// Creates the file at `path` (emptied if it exists).
    /// - Throws: `.io` naming the path when it cannot be created.
    init(path: String, logger: Logger) throws(AccessoryError) {
        do {
            writer = try USBCaptureWriter(path: path)
        } catch {
            throw AccessoryError(.io, "cannot record the capture: \(error)", operation: "capture")
        }
        self.logger = logger
    }

    /// Records `info`'s descriptors as GET_DESCRIPTOR answers (device, configuration,
    /// strings), the way a capture begun before the device was plugged shows them from its
    /// enumeration. libusb reads them from sysfs, so during a session they never cross the
    /// wire; with them the capture is complete enough to replay
    /// (`SimulatedAccessory(replaying:device:)`).
    func describe(_ info: USBDeviceInfo) {
        guard let address = info.descriptor.address, let device = info.deviceDescriptor else { return }
        var answers: [(value: UInt16, index: UInt16, bytes: [UInt8])] = [(0x0100, 0, USBDescriptorEncoder.device(device))]
        if let c = info.configuration { answers.append((0x0200, 0, USBDescriptorEncoder.configuration(c))) }
        var strings: [UInt8: String] = [:]
        for (index, text) in [
            (device.manufacturerIndex, info.descriptor.manufacturer), (device.productIndex, info.descriptor.name),
            (device.serialNumberIndex, info.descriptor.serial),
        ] where index != 0 {
            strings[index] = text
        }
        for i in info.configuration?.interfaces ?? [] where i.nameIndex != 0 {
            if let name = i.name { strings[i.nameIndex] = name }
        }
        if !strings.isEmpty { answers.append((0x0300, 0, USBDescriptorEncoder.languages)) }
        for (index, text) in strings.sorted(by: { $0.key < $1.key }) {
            answers.append((0x0300 | UInt16(index), 0x0409, USBDescriptorEncoder.string(text)))
        }
        for a in answers {
            let setup = USBCapture.Setup(requestType: 0x80, request: 6, value: a.value, index: a.index, length: UInt16(a.bytes.count))
            let urb = submit(bus: info.descriptor.bus, device: address, endpoint: 0x80, kind: .control, setup: setup, requestedLength: a.bytes.count)
            complete(urb, TransferCompletion(status: .completed, data: a.bytes))
        }
    }

    /// One transfer's place in the capture: what its completion needs.
    struct URB: Sendable {
        var id: UInt64
        var bus: Int
        var device: Int
        var endpoint: UInt8
        var kind: USBCapture.Transfer.Kind
    }

    /// Records a submission and returns its URB.
    /// - Parameters:
    ///   - endpoint: with the direction bit; for control, the setup's direction (0x00 or 0x80).
    ///   - data: OUT only.
    func submit(
        bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, setup: USBCapture.Setup? = nil,
        data: ArraySlice<UInt8> = [], requestedLength: Int
    ) -> URB {
        let id = state.withLock { s in
            defer { s.nextID &+= 1 }
            return s.nextID
        }
        let urb = URB(id: id, bus: bus, device: device, endpoint: endpoint, kind: kind)
        // With a writer thread, the record waits in the writer's queue (`data` is a value: the
        // queue keeps these bytes alive and unchanged until they are written), and is written
        // before any later record, so before the transfer's completion's.
        let deferred = batchesPasses.withLock { $0 }
        note {
            try writer.submit(
                urbID: id, bus: bus, device: device, endpoint: endpoint, kind: kind, setup: setup, data: data,
                requestedLength: requestedLength, deferred: deferred)
        }
        return urb
    }

    /// Records how `urb` ended: IN data received, or how many bytes went OUT.
    func complete(_ urb: URB, _ completion: TransferCompletion) {
        complete(urb, completion, deferred: false)
    }

    /// Records how `urb` ended, then runs `deliver` (which hands the completion on). On the
    /// event thread of a host whose passes are batched, both wait for the end of the pass.
    func complete(_ urb: URB, _ completion: TransferCompletion, then deliver: @escaping @Sendable () -> Void) {
        guard batchesPasses.withLock({ $0 }), LibUSBEventThread.isCurrent else {
            complete(urb, completion, deferred: false)
            deliver()
            return
        }
        complete(urb, completion, deferred: true)
        deliveries.withLock { $0.append(deliver) }
    }

    /// From now on, completions on the libusb event thread are recorded at the end of its
    /// pass (``endEventPass()``, which the host's event thread runs after each pass).
    func batchEventPasses() {
        batchesPasses.withLock { $0 = true }
    }

    /// The end of a pass of the event loop: hands the pass's completions to the writer
    /// thread, which writes everything queued so far (the pass's records and the submissions
    /// before them) with one `writev(2)`, then hands the completions on, in order.
    func endEventPass() {
        let held = deliveries.withLock { d in
            defer { d = [] }
            return d
        }
        guard !held.isEmpty else { return }
        writerQueue.async { [self] in
            note { try writer.flush() }
            for deliver in held { deliver() }
        }
    }

    private func complete(_ urb: URB, _ completion: TransferCompletion, deferred: Bool) {
        note {
            try writer.complete(
                urbID: urb.id, bus: urb.bus, device: urb.device, endpoint: urb.endpoint, kind: urb.kind,
                status: Self.status(completion.status), data: urb.endpoint & 0x80 != 0 ? completion.data[...] : [],
                actualLength: completion.length, deferred: deferred)
        }
    }

    /// Records a control transfer's end: its IN bytes, or the error it threw.
    func complete(_ urb: URB, control result: Result<[UInt8], AccessoryError>, sent: Int) {
        switch result {
        case .success(let bytes):
            complete(urb, TransferCompletion(status: .completed, data: bytes, length: urb.endpoint & 0x80 != 0 ? bytes.count : sent))
        case .failure(let error):
            complete(urb, TransferCompletion(status: Self.transferStatus(error.code), length: 0))
        }
    }

    /// Records that `urb` could not be submitted (`E`).
    func fail(_ urb: URB, _ error: AccessoryError) {
        note {
            try writer.fail(
                urbID: urb.id, bus: urb.bus, device: urb.device, endpoint: urb.endpoint, kind: urb.kind,
                status: Self.status(Self.transferStatus(error.code)))
        }
    }

    /// usbmon's status for a transfer's end: 0, or the negative errno usbfs reports.
    static func status(_ status: TransferStatus) -> Int32 {
        switch status {
        case .completed: 0
        case .cancelled, .timedOut: -ENOENT  // libusb cancels a transfer that times out
        case .stall: -EPIPE
        case .noDevice: -ESHUTDOWN
        case .overflow: -EOVERFLOW
        case .error: -EPROTO
        case .failed(let error): Self.status(Self.transferStatus(error.code))
        }
    }

    /// The transfer status an error of a control transfer stands for.
    static func transferStatus(_ code: AccessoryError.Code) -> TransferStatus {
        if code.disconnectReason != nil { return .noDevice }
        if code == .stall { return .stall }
        if code == .timeout || code == .cancelled { return .cancelled }
        if code == .overflow { return .overflow }
        return .error
    }

    /// Why the capture is incomplete: the first write that failed, or the sync when it was
    /// closed; `nil` while all is well.
    var error: AccessoryError? {
        writer.failure.map { AccessoryError(.io, "cannot record the capture: \($0)", operation: "capture") }
    }

    /// Writes what is left, syncs the file to its disk and closes it; later transfers are
    /// not recorded. The error, if any, is kept in ``error``.
    func close() {
        note { try writer.close() }
    }

    private func note(_ write: () throws -> Void) {
        do {
            try write()
        } catch {
            let first = state.withLock { s in
                defer { s.failed = true }
                return !s.failed
            }
            if first { logger.warning("the capture is incomplete from here on: \(error)") }
        }
    }
}
