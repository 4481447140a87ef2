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

        /// The setup packet in usbmon's setup field: its eight bytes in USB order, the first
        /// in the low byte.
        package init(field: UInt64) {
            requestType = UInt8(truncatingIfNeeded: field)
            request = UInt8(truncatingIfNeeded: field >> 8)
            value = UInt16(truncatingIfNeeded: field >> 16)
            index = UInt16(truncatingIfNeeded: field >> 32)
            length = UInt16(truncatingIfNeeded: field >> 48)
        }

        /// The eight bytes as usbmon's setup field holds them, the first in the low byte.
        package var field: UInt64 {
            UInt64(requestType) | UInt64(request) << 8 | UInt64(value) << 16 | UInt64(index) << 32 | UInt64(length) << 48
        }

        /// Whether this is the standard GET_DESCRIPTOR(DEVICE) request.
        package var isDeviceDescriptorRequest: Bool {
            requestType == 0x80 && request == 6 && value >> 8 == 1
        }
    }
}
