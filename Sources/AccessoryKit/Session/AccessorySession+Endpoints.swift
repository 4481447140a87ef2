extension AccessorySession {
    /// The bulk and interrupt endpoints of the claimed interface, in its current alternate
    /// setting, in descriptor order.
    public var endpoints: [AccessoryEndpoint] { pipe.calls.endpoints }

    /// The claimed interface's current alternate setting (see ``selectAlternateSetting(_:)``).
    public var alternateSetting: UInt8 { pipe.calls.alternate }

    /// One-transfer calls whose transfer is in flight, for tests that must know a call has
    /// been submitted.
    package var callsInFlight: Int { pipe.calls.inFlight }

    /// One IN transfer on `endpoint`: at most `length` bytes, exactly as the device sent them
    /// (a short packet ends the transfer; `[]` is a zero-length packet).
    ///
    /// Each call is one transfer, as WebUSB's `transferIn` is. Calls on different endpoints
    /// run concurrently; calls on one endpoint reach the device, and complete, in the order
    /// they were made. Nothing is read from an endpoint before a call (or a stream read) on it.
    ///
    /// ```swift
    /// let event = try await session.transferIn(0x83, length: 64, timeout: .seconds(1))
    /// ```
    ///
    /// - Parameters:
    ///   - endpoint: an IN endpoint of ``endpoints``, such as `0x83`.
    ///   - length: 0...16,777,216 bytes (16 MiB, usbfs's default memory limit), in one
    ///     transfer however large. A device that sends more than `length` (not ending on a
    ///     packet boundary) makes the call throw `.overflow`.
    ///   - timeout: how long the transfer may take; `nil` waits forever.
    /// - Throws: ``AccessoryError``: `.notFound` naming the endpoint when it is not an IN
    ///   endpoint of the claimed interface, and `.invalidArgument` naming the value for a
    ///   `length` outside 0...16,777,216 or a negative `timeout`, before anything is sent; `.busy` when `endpoint` is the one
    ///   ``input`` reads and the stream has reads in flight; `.timeout`; `.cancelled` when
    ///   the task is cancelled; `.stall` until ``clearHalt(_:)``;
    ///   `.accessoryDisconnected(reason)` with the reason the streams get; `.sessionClosed`.
    ///   A timeout or cancellation drops what the transfer had received:
    ///   ``AccessoryError/bytesTransferred`` says how much.
    public func transferIn(_ endpoint: UInt8, length: Int, timeout: Duration? = nil) async throws(AccessoryError) -> [UInt8] {
        let operation = "transferIn"
        try ArgumentCheck.check(length, in: 0...ArgumentCheck.maxTransferInLength, "length", operation: operation)
        let timeout = try ArgumentCheck.timeout(timeout, operation: operation)
        let target = try callEndpoint(endpoint, isIn: true, operation)
        let streams = endpoint == inEndpoint ? pipe : nil
        return try await pipe.calls.transfer(target, bytes: nil, length: length, timeout: timeout) {
            guard let streams, streams.isReading else { return nil }
            return AccessoryError(
                .busy, "\(self) reads \(target) for its input stream now; transferIn on it waits until the stream stops",
                operation: operation)
        }.get()
    }

    /// One OUT transfer of exactly `bytes` on `endpoint` (`[]` sends a zero-length packet).
    /// See ``transferIn(_:length:timeout:)`` for how calls run.
    ///
    /// - Parameters:
    ///   - endpoint: an OUT endpoint of ``endpoints``, such as `0x01`.
    ///   - bytes: at most 16 MiB (usbfs's default memory limit).
    ///   - timeout: how long the transfer may take; `nil` waits forever.
    /// - Throws: ``AccessoryError``: `.notFound` naming the endpoint when it is not an OUT
    ///   endpoint of the claimed interface, and `.invalidArgument` for too many bytes or a
    ///   negative `timeout`, before anything is sent; `.busy` when `endpoint` is the one
    ///   ``write(_:)-([UInt8])`` sends on and the stream has bytes queued or in flight
    ///   (``flush()`` first); `.timeout` and `.cancelled`, with
    ///   ``AccessoryError/bytesTransferred`` saying how many bytes the device took; `.stall`;
    ///   `.accessoryDisconnected(reason)`; `.sessionClosed`.
    public func transferOut(_ endpoint: UInt8, _ bytes: [UInt8], timeout: Duration? = nil) async throws(AccessoryError) {
        let operation = "transferOut"
        try ArgumentCheck.check(bytes.count, in: 0...ArgumentCheck.maxTransferOutLength, "byte count", operation: operation)
        let timeout = try ArgumentCheck.timeout(timeout, operation: operation)
        let target = try callEndpoint(endpoint, isIn: false, operation)
        let streams = endpoint == outEndpoint ? pipe : nil
        _ = try await pipe.calls.transfer(target, bytes: bytes, length: bytes.count, timeout: timeout) {
            guard let streams, streams.isWriting else { return nil }
            return AccessoryError(.busy, "\(self) has output queued on \(target); flush() before transferOut on it", operation: operation)
        }.get()
    }

    /// Clears a halt (stall) on `endpoint`, any endpoint of ``endpoints``. On an endpoint the
    /// streams use, the streams pause meanwhile, as ``clearHalt()`` does.
    ///
    /// While it runs, a new call on `endpoint` is `.busy`. The clear (an ioctl that waits
    /// for the device) runs off the cooperative pool.
    ///
    /// - Throws: ``AccessoryError``: `.notFound` naming the endpoint; `.busy` while calls are
    ///   in flight on it (a halted endpoint ends them with `.stall`) or another clear is;
    ///   `.accessoryDisconnected(reason)`; `.sessionClosed`.
    public func clearHalt(_ endpoint: UInt8) async throws(AccessoryError) {
        let operation = "clear halt"
        _ = try callEndpoint(endpoint, isIn: nil, operation)
        // New calls on the endpoint are .busy until the halt is cleared.
        if let refusal = pipe.calls.beginClearingHalt(endpoint) { throw refusal }
        defer { pipe.calls.endClearingHalt(endpoint) }
        let streams = endpoint == inEndpoint || endpoint == outEndpoint
        if streams { try await pipe.beginClearingStall().get() }
        defer { if streams { pipe.endClearingStall() } }
        try await onDevice(operation) { device throws(AccessoryError) in try device.clearHalt(endpoint: endpoint) }
    }

    /// Selects an alternate setting of the claimed interface (USB SET_INTERFACE); ``endpoints``
    /// then lists that setting's endpoints. The streams pause meanwhile and then go on, on the
    /// endpoints they were opened with.
    ///
    /// - Throws: ``AccessoryError``: `.notFound` when the interface has no such setting, before
    ///   anything is sent; `.busy` while one-transfer calls are in flight (they are not cut
    ///   short); the device's refusal; `.accessoryDisconnected(reason)`; `.sessionClosed`.
    public func selectAlternateSetting(_ setting: UInt8) async throws(AccessoryError) {
        let operation = "select alternate setting"
        let calls = pipe.calls
        guard calls.settings[setting] != nil else {
            let known = calls.settings.keys.sorted().map(String.init).joined(separator: ", ")
            throw AccessoryError(
                .notFound, "interface \(interfaceNumber) of \(self) has no alternate setting \(setting) (it has \(known))",
                operation: operation)
        }
        if let refusal = calls.beginSwitching() { throw refusal }
        var selected: UInt8?
        defer { calls.endSwitching(to: selected) }
        try await pipe.beginClearingStall().get()
        defer { pipe.endClearingStall() }
        let number = interfaceNumber
        try await onDevice(operation) { device throws(AccessoryError) in try device.setAlternateSetting(setting, interface: number) }
        selected = setting
    }

    /// The endpoint `address` of the current setting, checked for direction (`isIn`, or
    /// either when `nil`); `.notFound` naming it otherwise.
    private func callEndpoint(_ address: UInt8, isIn: Bool?, _ operation: String) throws(AccessoryError) -> AccessoryEndpoint {
        let endpoints = self.endpoints
        // The words of the errors are made only when one is thrown: this runs on every call.
        var place: String { "interface \(interfaceNumber) (alternate setting \(alternateSetting)) of \(self)" }
        guard let endpoint = endpoints.first(where: { $0.address == address }) else {
            let has = endpoints.isEmpty ? "none" : endpoints.map(\.description).joined(separator: ", ")
            throw AccessoryError(
                .notFound, "endpoint \(hexByte(address)) is not a bulk or interrupt endpoint of \(place); it has \(has)",
                operation: operation)
        }
        if let isIn, endpoint.isIn != isIn {
            throw AccessoryError(
                .notFound, "\(endpoint) of \(place) is an \(endpoint.isIn ? "IN" : "OUT") endpoint; \(operation) needs an \(isIn ? "IN" : "OUT") one",
                operation: operation)
        }
        return endpoint
    }
}
