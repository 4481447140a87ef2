import AccessoryCore
import Logging
import Synchronization

import FoundationEssentials

/// A conversation with an accessory in one protocol: `EASession` for Linux, over a claimed
/// interface. Its byte streams use the interface's first IN and OUT endpoints: bulk ones, or
/// interrupt ones where the interface has no bulk endpoint in that direction. Both kinds
/// behave the same here. Every bulk and interrupt endpoint of the interface is also reachable
/// one transfer per call, as WebUSB's are: ``endpoints``, ``transferIn(_:length:timeout:)``,
/// ``transferOut(_:_:timeout:)``, ``clearHalt(_:)`` and ``selectAlternateSetting(_:)``.
///
/// Open one with `AccessoryManager.withSession(to:protocol:name:options:isolation:_:)`
/// (scoped: the session is closed however the body ends) or
/// ``AccessoryManager/openSession(to:protocol:name:options:)`` and ``close()``.
///
/// ```swift
/// try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
///     try await session.write(Array("hello".utf8))
///     for try await chunk in session.input { print(chunk) }
/// }
/// ```
///
/// - ``input`` delivers what the accessory sends, fed by several IN transfers in
///   flight from the first read on, with a bounded buffer for back-pressure. No IN transfer
///   is submitted on an endpoint before the code reads from it.
/// - `write(_:)` queues bytes, which go out in transfers kept in flight, and returns once
///   they are queued; ``flush()`` waits until the accessory has accepted them.
/// - Every failure is an ``AccessoryError``. When the accessory goes away (a transfer finds
///   it gone, or the manager disconnects its connection ID for any reason), both directions
///   end at once with `.accessoryDisconnected(reason)`, where `reason` is the one the
///   manager's `.disconnected` notification for that ID carries. Cancelling a task cancels its
///   transfers and throws `.cancelled`; the session stays usable. After ``close()``, writes
///   throw `.sessionClosed` and the input finishes.
/// - Only one session per accessory and protocol can be open at a time.
public final class AccessorySession: Sendable, CustomStringConvertible {
    /// The name given at open, for diagnostics (`session-N` by default).
    public let name: String
    /// The accessory, as it was when the session opened.
    public let accessory: Accessory
    /// The protocol the session speaks; `interface N` for a session opened by interface
    /// number.
    public let protocolName: String
    /// The options it was opened with.
    public let options: Options
    /// The claimed interface.
    package let interfaceNumber: UInt8
    /// The byte streams' IN and OUT endpoint addresses, such as `0x81` and `0x01`; `0x80` or
    /// `0x00` where the interface has none in that direction (its stream fails, saying so).
    package let inEndpoint: UInt8
    /// The OUT endpoint address.
    package let outEndpoint: UInt8

    /// The OUT endpoint's packet size, which decides when a zero-length packet is needed.
    package let maxPacketSize: Int

    let manager: AccessoryManager
    let key: SessionKey
    let pipe: DataPlane
    /// What closing needs. The manager keeps it, and only a weak reference to this handle,
    /// so that a session nobody holds any more is closed and reported (see `deinit`).
    let resources: SessionResources

    /// A session on what `prepared` opened and claimed.
    init(
        name: String, accessory: Accessory, protocolName: String, options: Options, prepared: SessionOpener.Prepared,
        manager: AccessoryManager, logger: Logger
    ) {
        self.name = name
        self.accessory = accessory
        self.protocolName = protocolName
        self.options = options
        self.interfaceNumber = prepared.interface
        self.inEndpoint = prepared.inEndpoint.address
        self.outEndpoint = prepared.outEndpoint.address
        self.maxPacketSize = max(prepared.outEndpoint.packetSize, 1)
        self.manager = manager
        self.key = SessionKey(connection: accessory.connectionID, protocolName: protocolName)
        self.pipe = prepared.pipe
        self.resources = SessionResources(
            name: name, label: Self.label(accessory), key: key, interface: prepared.interface, device: prepared.device,
            detachedDriver: prepared.detachedDriver, pipe: prepared.pipe, logger: logger)
        logger.debug(
            "opened \(self): \(protocolName) on accessory \(resources.label), interface \(prepared.interface), endpoints \(hexByte(outEndpoint)) and \(hexByte(inEndpoint))")
    }

    /// A session dropped without ``close()`` would keep its device and interface for as long
    /// as the manager lives: it is closed now, in the background, with a warning that names it.
    deinit {
        guard !resources.isClosed else { return }
        resources.logger.warning(
            "session '\(name)' on accessory \(resources.label) was dropped without close(); closing it")
        Task { [resources, manager] in await resources.close(manager: manager) }
    }

    public var description: String { "session '\(name)'" }

    /// What the accessory sends. See ``Input``.
    public var input: Input { Input(session: self) }

    /// The next chunk of input, as ``input`` delivers it; `nil` once the session is closed.
    /// An empty chunk is a zero-length packet. Waits at most ``Options/readTimeout``.
    ///
    /// - Throws: ``AccessoryError``: `.accessoryDisconnected(reason)`; `.timeout`;
    ///   `.cancelled` when the task is cancelled; `.stall`; `.busy` when another task is
    ///   reading, or a `transferIn` call is in flight on the stream's endpoint. Only a
    ///   disconnection is final; a timeout or cancellation loses nothing.
    public func read() async throws(AccessoryError) -> [UInt8]? {
        try await pipe.read(timeout: ArgumentCheck.timeout(options.readTimeout, "readTimeout", operation: "read")).get()
    }

    /// The next chunk of input, waiting at most `timeout` (`nil`: forever) instead of
    /// ``Options/readTimeout``. See ``read()``. A negative `timeout` throws `.invalidArgument`;
    /// one longer than about 49.7 days (libusb's longest) waits forever.
    public func read(timeout: Duration?) async throws(AccessoryError) -> [UInt8]? {
        try await pipe.read(timeout: ArgumentCheck.timeout(timeout, operation: "read")).get()
    }

    /// Exactly `count` bytes of input, across chunks (zero-length packets are skipped); the
    /// rest of the last chunk stays buffered. Waits at most ``Options/readTimeout``.
    ///
    /// - Throws: as ``read()``, and `.sessionClosed` when the session closes first. A
    ///   timeout or cancellation consumes nothing: the bytes gathered so far stay buffered.
    public func read(exactly count: Int) async throws(AccessoryError) -> [UInt8] {
        try await read(exactly: count, timeout: options.readTimeout)
    }

    /// Exactly `count` bytes of input, waiting at most `timeout` (`nil`: forever). See
    /// ``read(exactly:)``.
    /// A negative `count` or `timeout` throws `.invalidArgument`.
    public func read(exactly count: Int, timeout: Duration?) async throws(AccessoryError) -> [UInt8] {
        try ArgumentCheck.check(count, in: 0...Int.max, "count", operation: "read")
        let timeout = try ArgumentCheck.timeout(timeout, operation: "read")
        guard let bytes = try await pipe.read(exactly: count, timeout: timeout).get() else {
            throw AccessoryError(.sessionClosed, "\(self) is closed", operation: "read")
        }
        return bytes
    }

    /// Queues `bytes` for the accessory and returns once they are queued; waits while
    /// ``Options/writeBufferCapacity`` bytes are queued already (back-pressure), at most
    /// ``Options/writeTimeout``.
    ///
    /// The bytes go out in transfers of ``Options/transferSize`` (whole packets), with
    /// ``Options/writesInFlight`` in flight, in the order written. An empty write sends one
    /// zero-length packet. With ``Options/sendsZeroLengthPacket``, a write whose length is a
    /// nonzero multiple of `maxPacketSize` ends with a zero-length packet. Call ``flush()``
    /// to wait until the accessory has accepted everything.
    ///
    /// - Throws: ``AccessoryError``: a failure of earlier output not yet reported (then
    ///   these bytes are not queued); `.timeout`; `.cancelled` when the task is cancelled
    ///   while waiting; `.stall`; `.busy` while a `transferOut` call is in flight on the
    ///   stream's endpoint; `.accessoryDisconnected(reason)`; `.sessionClosed`. A
    ///   failed output drops what it had not sent, so nothing after a gap is ever sent, and
    ///   ``AccessoryError/bytesTransferred`` says how much got through.
    public func write(_ bytes: [UInt8]) async throws(AccessoryError) {
        try await pipe.write(bytes[...], timeout: writeTimeout("write")).get()
    }

    /// Queues `bytes`, waiting at most `timeout` (`nil`: forever) for room instead of
    /// ``Options/writeTimeout``. See ``write(_:)-([UInt8])``. A negative `timeout` throws
    /// `.invalidArgument`; one longer than about 49.7 days waits forever.
    public func write(_ bytes: [UInt8], timeout: Duration?) async throws(AccessoryError) {
        try await pipe.write(bytes[...], timeout: ArgumentCheck.timeout(timeout, operation: "write")).get()
    }

    /// Queues `bytes`; see ``write(_:)-([UInt8])``.
    public func write<Bytes: Sequence<UInt8>>(_ bytes: Bytes) async throws(AccessoryError) {
        try await pipe.write(Array(bytes)[...], timeout: writeTimeout("write")).get()
    }

    /// Queues the bytes of `data`; see ``write(_:)-([UInt8])``.
    public func write(_ data: Data) async throws(AccessoryError) {
        try await pipe.write([UInt8](data)[...], timeout: writeTimeout("write")).get()
    }

    /// Queues `string` as UTF-8; see ``write(_:)-([UInt8])``.
    public func write(_ string: String) async throws(AccessoryError) {
        try await pipe.write(Array(string.utf8)[...], timeout: writeTimeout("write")).get()
    }

    /// Waits until the accessory has accepted everything written, at most
    /// ``Options/writeTimeout``.
    ///
    /// - Throws: what stopped the output (with ``AccessoryError/bytesTransferred``);
    ///   `.timeout` and `.cancelled` stop the output the same way.
    public func flush() async throws(AccessoryError) {
        try await pipe.flush(timeout: writeTimeout("flush")).get()
    }

    /// Waits until everything written has been sent, at most `timeout` (`nil`: forever).
    /// See ``flush()``. A negative `timeout` throws `.invalidArgument`; one longer than about
    /// 49.7 days waits forever.
    public func flush(timeout: Duration?) async throws(AccessoryError) {
        try await pipe.flush(timeout: ArgumentCheck.timeout(timeout, operation: "flush")).get()
    }

    /// ``Options/writeTimeout`` as the data plane takes it (checked when the session opened).
    private func writeTimeout(_ operation: String) throws(AccessoryError) -> Duration? {
        try ArgumentCheck.timeout(options.writeTimeout, "writeTimeout", operation: operation)
    }

    /// Clears a halt (stall) on both stream endpoints, after pausing the output and stopping
    /// the input (nothing is lost), then starts both again. A stall error the output kept for
    /// the next write is dropped. ``clearHalt(_:)`` clears one endpoint.
    public func clearHalt() async throws(AccessoryError) {
        let endpoints = [outEndpoint, inEndpoint].filter { !AbsentEndpointQueue.isPlaceholder($0) }
        var held: [UInt8] = []
        defer { for endpoint in held { pipe.calls.endClearingHalt(endpoint) } }
        for endpoint in endpoints {
            if let refusal = pipe.calls.beginClearingHalt(endpoint) { throw refusal }
            held.append(endpoint)
        }
        try await pipe.beginClearingStall().get()
        defer { pipe.endClearingStall() }
        try await onDevice("clear halt") { device throws(AccessoryError) in
            for endpoint in endpoints { try device.clearHalt(endpoint: endpoint) }
        }
    }

    /// The old name of ``clearHalt()``.
    @available(*, deprecated, renamed: "clearHalt()")
    public func clearStall() async throws(AccessoryError) { try await clearHalt() }

    /// The open device, or `.sessionClosed`.
    func openDevice(_ operation: String) throws(AccessoryError) -> any USBDeviceConnection {
        guard let device = resources.device else {
            throw AccessoryError(.sessionClosed, "\(self) is closed", operation: operation)
        }
        return device
    }

    /// Runs a blocking call on the open device, off the cooperative pool (``BlockingCall``).
    /// - Throws: the call's error; when the device is (maybe) gone, the manager's verdict,
    ///   which ends the session (see ``deviceFailed(_:operation:)``).
    func onDevice(
        _ operation: String, _ body: @escaping @Sendable (any USBDeviceConnection) throws(AccessoryError) -> Void
    ) async throws(AccessoryError) {
        let device = try openDevice(operation)
        do {
            try await BlockingCall.run { () throws(AccessoryError) in try body(device) }
        } catch {
            throw await deviceFailed(error, operation: operation)
        }
    }

    /// What a failed call on the device means for the session: a sign that the device is
    /// gone goes to the manager, as a transfer's does, and the session ends with the
    /// manager's verdict, which this returns; any other error is returned as it is.
    func deviceFailed(_ error: AccessoryError, operation: String) async -> AccessoryError {
        guard error.code.disconnectReason != nil else { return error }
        return await pipe.deviceGone(DeviceGoneSign(operation: error.operation ?? operation))
    }

    /// Whether ``close()`` has finished.
    public var isClosed: Bool { resources.isClosed }

    /// Closes the session: drops queued output (``flush()`` first to send it), cancels the
    /// transfers in flight and waits for them, releases the interface and attaches again a
    /// kernel driver the session detached. A waiting read returns `nil`; a waiting write or
    /// flush throws `.sessionClosed`.
    ///
    /// Idempotent, and not cancellable: it always runs to the end. A second call waits for
    /// the first to finish.
    public func close() async {
        await resources.close(manager: manager)
    }

    // MARK: Internal

    /// Ends both directions because the manager disconnected this session's connection.
    func connectionEnded(_ reason: DisconnectReason) {
        resources.connectionEnded(reason)
    }

    func disconnectedError(_ reason: DisconnectReason) -> AccessoryError {
        Self.disconnectedError(reason, label: Self.label(accessory))
    }

    static func disconnectedError(_ reason: DisconnectReason, label: String) -> AccessoryError {
        var operation: String?
        if case .ghostEvicted(.noDevice(let op)) = reason { operation = op }
        return AccessoryError(.accessoryDisconnected(reason), "accessory \(label) disconnected: \(reason)", operation: operation)
    }

    /// `1209:0001 SN1`: VID:PID and the serial, or the port without one.
    static func label(_ accessory: Accessory) -> String {
        let d = accessory.descriptor
        return "\(d.vendorProduct) \(d.serial.flatMap { $0.isEmpty ? nil : $0 } ?? d.port)"
    }

    /// Counters of the data plane, for tests.
    var statistics: DataPlane.Statistics { pipe.statistics }
}

/// What the manager tracks sessions by: one session per connection and protocol.
struct SessionKey: Hashable, Sendable {
    var connection: ConnectionID
    var protocolName: String
}
