import AccessoryCore

/// An opened device, as sessions use it: interfaces, kernel drivers, halts and names. The
/// libusb device handle is one; a simulated device is another. Every call may throw
/// `.accessoryDisconnected` once the device is gone.
package protocol USBDeviceConnection: AnyObject, Sendable {
    func claimInterface(_ number: UInt8) throws(AccessoryError)
    func releaseInterface(_ number: UInt8) throws(AccessoryError)
    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError)
    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool
    func detachKernelDriver(interface number: UInt8) throws(AccessoryError)
    func attachKernelDriver(interface number: UInt8) throws(AccessoryError)
    func clearHalt(endpoint: UInt8) throws(AccessoryError)
    /// Resets the device (a port reset): it may come back under a new address.
    func reset() throws(AccessoryError)
    /// The transfer primitive on one bulk or interrupt endpoint (see ``EndpointTransfers``),
    /// for a stream or for one-transfer calls; nothing is submitted until one needs it.
    func makeEndpointTransfers(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int
    ) throws(AccessoryError) -> any EndpointTransfers
    /// One control transfer on endpoint 0. It can be cancelled: cancelling the task ends it
    /// with `.cancelled`.
    /// - Returns: the bytes received (IN), or `[]` (OUT).
    /// - Throws: `.stall` when the device refuses the request, `.timeout`, `.cancelled`,
    ///   `.accessoryDisconnected` when the device is gone.
    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8]
    /// The active configuration with its interfaces' string descriptors read from the
    /// device, or `nil` when they cannot be read.
    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration?
}

extension USBDeviceConnection {
    func configurationWithInterfaceNames() -> USBConfiguration? {
        configurationWithInterfaceNames(timeout: .milliseconds(500))
    }
}
