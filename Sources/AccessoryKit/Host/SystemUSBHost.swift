import AccessoryCore
import Logging

/// The machine's own USB: libusb for hotplug notices and for opening devices, sysfs for the
/// OS truth (libusb's device list is a cache fed by the same events that get lost).
/// Without libusb (no USB on the machine) it still scans sysfs, with no hotplug.
struct SystemUSBHost: USBHost {
    let backend: LibUSBBackend?
    /// The OS truth, read through a cache: a look at an unchanged device is one small read.
    let sysfs: SysfsCache
    /// What the manager's timers sleep on (the configuration's clock).
    let clock: any Clock<Duration>

    init(
        sysfsRoot: String, logger: Logger, reconcileInterval: Duration, clock: any Clock<Duration>, hotplugBatching: Duration = .zero
    ) {
        self.clock = clock
        do {
            backend = try LibUSBBackend(logger: logger, hotplugBatching: hotplugBatching)
        } catch {
            logger.notice("libusb is unavailable (\(error)); reconciling with sysfs every \(reconcileInterval)")
            backend = nil
        }
        // The manager sees hubs too, so that their events are not unknown devices; it hides
        // them when it announces accessories.
        sysfs = SysfsCache(SysfsScanner(root: sysfsRoot, includeHubs: true))
    }

    func scan() -> SysfsScanner.Result { sysfs.scan() }

    func device(named port: String) -> USBDeviceInfo? { sysfs.device(named: port) }

    func arrival(_ notice: HotplugNotice) -> USBDeviceInfo? {
        sysfs.arrival(named: notice.descriptor.port, address: notice.descriptor.address, speed: notice.record?.speed)
    }

    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? {
        try backend?.startMonitoring()
    }

    func stopMonitoring() { backend?.stopMonitoring() }

    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection {
        guard let backend else {
            throw AccessoryError(.io, "libusb is unavailable on this machine", operation: "open")
        }
        return try backend.open(bus: bus, address: address, vendor: vendor, product: product)
    }


    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        let delay = deadline - uptime().monotonic
        let task = Task { [clock] in
            if delay > .zero {
                do { try await clock.sleep(for: delay) } catch { return }
            }
            await work()
        }
        return HostTimer { task.cancel() }
    }

    func uptime() -> SystemUptime { SystemUptime.now() }

    var version: String? { backend?.version }

    /// Hubs and port power, through sysfs and hub class requests.
    var hubPorts: HubPorts {
        HubPorts(
            files: SysfsPortFiles(root: sysfs.scanner.root),
            open: { [self] (bus, address) throws(AccessoryError) in try open(bus: bus, address: address, vendor: nil, product: nil) },
            device: { [sysfs] port in sysfs.device(named: port) })
    }

    func hubs() async -> [USBHub] { await hubPorts.hubs() }

    func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        try await hubPorts.setPower(port, on: on)
    }

    func reauthorize(port: String) async throws(AccessoryError) { try await hubPorts.reauthorize(port: port) }
}
