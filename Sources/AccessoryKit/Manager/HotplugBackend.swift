import AccessoryCore

/// What the manager needs from the hardware: hotplug notices and opening devices. The OS
/// truth comes from ``SysfsScanner`` instead, so tests can drive the manager with a fake
/// backend over a fake sysfs tree.
protocol HotplugBackend: Sendable {
    /// Subscribes to hotplug and starts event handling.
    /// - Returns: the notices, or `nil` when this platform has no hotplug (the manager then
    ///   relies on its periodic reconcile).
    func startMonitoring() throws(AccessoryError) -> AsyncStream<HotplugNotice>?

    /// Stops event handling and hotplug delivery, and finishes the notices. Returns only
    /// once no callback can run any more. Idempotent.
    func stopMonitoring()

    /// Opens a device by bus and address, checking its IDs; reaches devices that libusb's
    /// cache has missed.
    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> LibUSBDeviceHandle

    /// The libusb version, for diagnostics.
    var version: String { get }
}
