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

    /// The OS's view of an arrival's port, as much as the tracker needs to judge the
    /// arrival (``AccessoryTracker/arrived(_:portNow:at:)``): the whole device when it is
    /// the notice's instance, at least bus, address and IDs when another instance holds
    /// the port. By default, ``device(named:)``.
    func arrival(_ notice: HotplugNotice) -> USBDeviceInfo?

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

    /// Every hub, with how its ports switch power and what is on each port.
    func hubs() async -> [USBHub]

    /// Switches the power of one port (`1-1.4`: what plugs in there) and of its USB 3 peer.
    /// A hub that switches its ports together (ganged) or not at all is refused, by name.
    func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport

    /// A logical disconnect and re-enumeration of the device on `port`: its `authorized`
    /// to 0, then 1 (power stays on).
    func reauthorize(port: String) async throws(AccessoryError)
}

extension USBHost {
    package func arrival(_ notice: HotplugNotice) -> USBDeviceInfo? { device(named: notice.descriptor.port) }

    /// A host without hubs to switch: none listed.
    package func hubs() async -> [USBHub] { [] }

    /// A host without port power: refused.
    package func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        throw AccessoryError(.protocolNotSupported, "this host cannot switch port power", operation: "power")
    }

    /// A host without sysfs: refused.
    package func reauthorize(port: String) async throws(AccessoryError) {
        throw AccessoryError(.protocolNotSupported, "this host cannot reauthorize devices", operation: "reauthorize")
    }
}
