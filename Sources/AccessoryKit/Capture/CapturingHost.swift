import AccessoryCore

/// A host whose opened devices record every transfer in a capture (``CaptureRecorder``); all
/// else goes to the host it wraps. The manager wraps its host in one when the configuration
/// names a `capturePath`.
final class CapturingHost: USBHost {
    let inner: any USBHost
    let recorder: CaptureRecorder

    init(_ inner: any USBHost, recorder: CaptureRecorder) {
        self.inner = inner
        self.recorder = recorder
        // libusb's completions come in passes of its event thread: record each pass's together.
        if let thread = (inner as? SystemUSBHost)?.backend?.eventThread {
            thread.addAfterEachPass { [recorder] in recorder.endEventPass() }
            recorder.batchEventPasses()
        }
    }

    /// Opens the device; the first time, its descriptors go into the capture first
    /// (``CaptureRecorder/describe(_:)``, from one scan of the OS truth).
    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection {
        let connection = try inner.open(bus: bus, address: address, vendor: vendor, product: product)
        if recorder.isNew(bus: bus, address: address),
            let info = inner.scan().devices.first(where: { $0.descriptor.bus == bus && $0.descriptor.address == address })
        {
            recorder.describe(info)
        }
        return CapturingConnection(connection, recorder: recorder, bus: bus, device: address)
    }

    func scan() -> SysfsScanner.Result { inner.scan() }
    func device(named port: String) -> USBDeviceInfo? { inner.device(named: port) }
    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? { try inner.startMonitoring() }
    func stopMonitoring() { inner.stopMonitoring() }
    func uptime() -> SystemUptime { inner.uptime() }
    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        inner.schedule(at: deadline, work)
    }
    var version: String? { inner.version }
    func report(_ work: @escaping @Sendable () async -> Void) { inner.report(work) }
}
