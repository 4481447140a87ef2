extension USBCapture {
    /// The eight-byte setup packet of a control transfer.
    public struct Setup: Hashable, Sendable {
        /// `bmRequestType`: bit 7 set for device-to-host (IN).
        public var requestType: UInt8
        /// `bRequest`.
        public var request: UInt8
        /// `wValue`.
        public var value: UInt16
        /// `wIndex`.
        public var index: UInt16
        /// `wLength`: the length of the data stage.
        public var length: UInt16

        /// A setup packet with these fields.
        public init(requestType: UInt8, request: UInt8, value: UInt16, index: UInt16, length: UInt16) {
            self.requestType = requestType
            self.request = request
            self.value = value
            self.index = index
            self.length = length
        }

        /// Reads the eight bytes at `offset` of `raw` (USB order: little-endian words).
        package init(_ raw: UnsafeRawBufferPointer, at offset: Int) {
            requestType = raw[offset]
            request = raw[offset + 1]
            value = raw.u16(offset + 2, bigEndian: false)
            index = raw.u16(offset + 4, bigEndian: false)
            length = raw.u16(offset + 6, bigEndian: false)
        }

        /// The eight bytes, as they go on the wire.
        package var bytes: [UInt8] {
            [requestType, request, UInt8(value & 0xff), UInt8(value >> 8), UInt8(index & 0xff), UInt8(index >> 8),
             UInt8(length & 0xff), UInt8(length >> 8)]
        }

        /// Whether this is the standard GET_DESCRIPTOR(DEVICE) request.
        package var isDeviceDescriptorRequest: Bool {
            requestType == 0x80 && request == 6 && value >> 8 == 1
        }
    }
}
