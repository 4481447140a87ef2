import AccessoryCore

/// The hardware seam: everything the manager needs from a USB host, with no libusb type in
/// it. ``SystemUSBHost`` is the real one (libusb for hotplug and devices, sysfs for the OS
/// truth); the `AccessoryTesting` product's `SimulatedUSB` is an in-process one on a virtual
/// clock.
package protocol USBHost: Sendable {
    /// The OS truth now: every USB device, hubs included, with a note when it could not be
    /// read.
    func scan() -> SysfsScanner.Result

    /// One device of the OS truth, by its port name (`1-1.4`), read without a full scan.
    func device(named port: String) -> USBDeviceInfo?

    /// Subscribes to hotplug and starts event handling.
    /// - Returns: the notices, or `nil` when this host has no hotplug (the manager then
    ///   relies on its periodic reconcile).
    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue?

    /// Stops event handling and hotplug delivery, and finishes the notices. Returns only
    /// once no callback can run any more. Idempotent.
    func stopMonitoring()

    /// Opens a device by bus and address, checking its IDs.
    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection

    /// The two clocks that reveal a system sleep, read now.
    func uptime() -> SystemUptime

    /// Runs `work` once ``uptime()``'s monotonic clock reaches `deadline`, unless the timer
    /// is cancelled first: the one way the manager waits for time. The system's host sleeps
    /// on the configuration's clock; a simulated host runs it when its virtual clock gets
    /// there (``VirtualTimers``).
    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer

    /// The host library's version, for diagnostics; `nil` where there is none.
    var version: String? { get }

    /// Runs `work`, news from a transfer's completion for the manager, in a task of its own.
    /// A simulated host counts it until it ends, so that a test's unplug moves on only once
    /// the manager has heard it.
    func report(_ work: @escaping @Sendable () async -> Void)
}

extension USBHost {
    package func report(_ work: @escaping @Sendable () async -> Void) {
        Task { await work() }
    }
}
