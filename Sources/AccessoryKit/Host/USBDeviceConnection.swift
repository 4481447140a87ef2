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
    /// A transfer queue on one endpoint, with `transfers` transfers of up to `transferSize`
    /// bytes each.
    func makeEndpointQueue(endpoint: UInt8, maxPacketSize: Int, transfers: Int, transferSize: Int) throws(AccessoryError) -> any EndpointQueue
    /// The active configuration with its interfaces' string descriptors read from the
    /// device, or `nil` when they cannot be read.
    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration?
}

extension USBDeviceConnection {
    func configurationWithInterfaceNames() -> USBConfiguration? {
        configurationWithInterfaceNames(timeout: .milliseconds(500))
    }
}
