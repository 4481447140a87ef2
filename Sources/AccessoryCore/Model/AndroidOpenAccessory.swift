/// Android Open Accessory's numbers, defined once for the manager's switch and the simulated
/// phone: its vendor requests (AOA 1 and 2; the HID and audio requests, 54–58, are not used)
/// and the IDs a phone takes in accessory mode.
package enum AndroidOpenAccessory {
    /// GET_PROTOCOL: the phone answers its AOA version in 2 bytes.
    package static let getProtocol: UInt8 = 51
    /// SEND_STRING: one of the six identifying strings, its index in `wIndex`.
    package static let sendString: UInt8 = 52
    /// START: the phone leaves the bus and comes back in accessory mode.
    package static let start: UInt8 = 53
    /// Google's vendor ID, which a phone in accessory mode has.
    package static let vendor: UInt16 = 0x18d1
    /// Accessory mode, with or without adb, audio or both.
    package static let accessoryProducts: ClosedRange<UInt16> = 0x2d00...0x2d05
}
