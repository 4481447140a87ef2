import AccessoryCore
import AccessoryLocking

/// A host whose opened devices record every transfer in a capture (``CaptureRecorder``); all
/// else goes to the host it wraps. The manager wraps its host in one when the configuration
/// names a `capturePath`.
final class CapturingHost: USBHost {
    let inner: any USBHost
    let recorder: CaptureRecorder
    /// The device whose descriptors the capture holds for each bus and address (`[bus, address]`).
    private let described = Locked<[[Int]: USBDeviceInfo]>([:])

    init(_ inner: any USBHost, recorder: CaptureRecorder) {
        self.inner = inner
        self.recorder = recorder
        // libusb's completions come in passes of its event thread: record each pass's together.
        if let thread = (inner as? SystemUSBHost)?.backend?.eventThread {
            thread.addAfterEachPass { [recorder] in
                recorder.endEventPass()
                return nil
            }
            recorder.batchEventPasses()
        }
    }

    /// Opens the device; when it is a device instance the capture has not described (a new
    /// address, or a known one that another device now holds: addresses are reused), its
    /// descriptors go into the capture first (``CaptureRecorder/describe(_:)``).
    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection {
        let connection = try inner.open(bus: bus, address: address, vendor: vendor, product: product)
        let key = [bus, address]
        let known = described.withLock { $0[key] }
        let here = { (d: USBDeviceInfo) in d.descriptor.bus == bus && d.descriptor.address == address }
        // The device there now: one read of its port when the address is known, else a scan.
        let current = known.flatMap { inner.device(named: $0.descriptor.port) }.flatMap { here($0) ? $0 : nil }
            ?? inner.scan().devices.first(where: here)
        // Described once per instance, however many opens race here.
        if let current, described.withLock({ d in d.updateValue(current, forKey: key) != current }) {
            recorder.describe(current)
        }
        return CapturingConnection(connection, recorder: recorder, bus: bus, device: address)
    }

    func scan() -> SysfsScanner.Result { inner.scan() }
    func device(named port: String) -> USBDeviceInfo? { inner.device(named: port) }
    func arrival(_ notice: HotplugNotice) -> USBDeviceInfo? { inner.arrival(notice) }
    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? { try inner.startMonitoring() }
    func stopMonitoring() { inner.stopMonitoring() }
    func uptime() -> SystemUptime { inner.uptime() }
    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        inner.schedule(at: deadline, work)
    }
    var version: String? { inner.version }
    func hubs() async -> [USBHub] { await inner.hubs() }
    func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        try await inner.setPortPower(port, on: on)
    }
    func reauthorize(port: String) async throws(AccessoryError) { try await inner.reauthorize(port: port) }
}
