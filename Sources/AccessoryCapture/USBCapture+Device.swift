extension USBCapture {
    /// A device that a capture shows: every bus and address with at least one URB.
    public struct Device: Hashable, Sendable {
        /// The bus number, as usbmon records it.
        public var bus: Int
        /// The device address on its bus.
        public var address: Int
        /// `idVendor` from a recorded GET_DESCRIPTOR(DEVICE) answer; `nil` when the capture has none.
        public var vendor: UInt16?
        /// `idProduct` from a recorded GET_DESCRIPTOR(DEVICE) answer; `nil` when the capture has none.
        public var product: UInt16?

        package init(bus: Int, address: Int, vendor: UInt16? = nil, product: UInt16? = nil) {
            self.bus = bus
            self.address = address
            self.vendor = vendor
            self.product = product
        }
    }
}
