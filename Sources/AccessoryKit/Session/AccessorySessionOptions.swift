extension AccessorySession {
    /// How a session moves data. The defaults suit a high-speed bulk accessory. Each
    /// setting has one name, prefixed `read` or `write` where it concerns one direction.
    ///
    /// Opening a session with a setting out of its range throws `.invalidArgument` naming
    /// it: transfers in flight 1...1024, `transferSize` 1...16 MiB (usbfs's default memory
    /// limit), capacities and limits 0 or more, timeouts `nil` or 0 or more (longer than
    /// about 49.7 days, libusb's longest, waits forever).
    public struct Options: Sendable, Hashable {
        /// IN transfers kept in flight.
        public var readsInFlight: Int
        /// OUT transfers kept in flight.
        public var writesInFlight: Int
        /// Bytes per transfer. IN transfers are rounded up to whole packets of the IN
        /// endpoint, OUT transfers down to whole packets of the OUT endpoint.
        public var transferSize: Int
        /// Unread input bytes after which no new IN transfer is submitted (back-pressure).
        /// Up to `readsInFlight × transferSize` more may still arrive from transfers already
        /// in flight.
        public var readBufferCapacity: Int
        /// Unread input chunks at most, counting the IN transfers in flight, so that
        /// zero-length or tiny packets cannot pile up while nobody reads.
        public var readBufferItemLimit: Int
        /// Bytes a write may leave queued before it waits (back-pressure); `write` returns
        /// once its bytes are queued, and ``AccessorySession/flush()`` waits until they are
        /// sent. At least one transfer.
        public var writeBufferCapacity: Int
        /// Whether a write whose length is a nonzero multiple of the OUT endpoint's packet
        /// size ends with a zero-length packet, as protocols that delimit messages by short
        /// packets need. (A write of zero bytes always sends a zero-length packet.)
        public var sendsZeroLengthPacket: Bool
        /// How long one read waits for data; `nil` waits forever. A timeout throws `.timeout`
        /// and loses nothing: the session stays usable.
        public var readTimeout: Duration?
        /// How long one write may wait for room in the output queue, and one flush for the
        /// queue to be sent; `nil` waits forever. A timeout throws `.timeout` with
        /// ``AccessoryError/bytesTransferred`` and drops what was not sent.
        public var writeTimeout: Duration?
        /// Whether to detach a kernel driver bound to the interface. It is attached again
        /// when the session closes. Without this, a bound driver makes the open fail with
        /// `.busy`.
        public var detachKernelDriver: Bool

        /// Options; every default suits a bulk stream.
        public init(

            readsInFlight: Int = 4, writesInFlight: Int = 4, transferSize: Int = 64 * 1024,
            readBufferCapacity: Int = 1 << 20, readBufferItemLimit: Int = 1024, writeBufferCapacity: Int = 1 << 20,
            sendsZeroLengthPacket: Bool = false, readTimeout: Duration? = nil, writeTimeout: Duration? = nil,
            detachKernelDriver: Bool = false
        ) {
            self.readsInFlight = readsInFlight
            self.writesInFlight = writesInFlight
            self.transferSize = transferSize
            self.readBufferCapacity = readBufferCapacity
            self.readBufferItemLimit = readBufferItemLimit
            self.writeBufferCapacity = writeBufferCapacity
            self.sendsZeroLengthPacket = sendsZeroLengthPacket
            self.readTimeout = readTimeout
            self.writeTimeout = writeTimeout
            self.detachKernelDriver = detachKernelDriver
        }

        /// Throws `.invalidArgument` for the first setting out of its range.
        package func validate(operation: String) throws(AccessoryError) {
            try ArgumentCheck.check(readsInFlight, in: 1...1024, "readsInFlight", operation: operation)
            try ArgumentCheck.check(writesInFlight, in: 1...1024, "writesInFlight", operation: operation)
            try ArgumentCheck.check(transferSize, in: 1...(16 << 20), "transferSize", operation: operation)
            try ArgumentCheck.check(readBufferCapacity, in: 0...Int.max, "readBufferCapacity", operation: operation)
            try ArgumentCheck.check(readBufferItemLimit, in: 0...Int.max, "readBufferItemLimit", operation: operation)
            try ArgumentCheck.check(writeBufferCapacity, in: 0...Int.max, "writeBufferCapacity", operation: operation)
            _ = try ArgumentCheck.timeout(readTimeout, "readTimeout", operation: operation)
            _ = try ArgumentCheck.timeout(writeTimeout, "writeTimeout", operation: operation)
        }
    }
}
