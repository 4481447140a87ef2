import AccessoryCore
import Logging
import Synchronization

/// The real backend: one libusb context, its event thread and its hotplug registration.
final class LibUSBBackend: Sendable {
    let context: LibUSBContext
    /// The thread that handles every libusb event of ``context``: hotplug callbacks and
    /// transfer completions. Sessions submit asynchronous transfers on ``context`` and their
    /// callbacks run here.
    let eventThread: LibUSBEventThread
    private let hotplug = Mutex<LibUSBHotplug?>(nil)
    /// How often at most the event thread hands hotplug notices to the manager
    /// (`Configuration.hotplugBatching`); `.zero`: after every pass that has some.
    private let hotplugBatching: Duration

    init(logger: Logger, hotplugBatching: Duration = .zero) throws(AccessoryError) {
        self.hotplugBatching = hotplugBatching
        context = try LibUSBContext()
        eventThread = LibUSBEventThread(context: context, logger: logger)
    }

    deinit {
        stopMonitoring()
    }

    var version: String { context.version }

    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? {
        var registration: LibUSBHotplug?
        if context.hasHotplug {
            let h = try LibUSBHotplug(context: context)
            hotplug.withLock { $0 = h }
            eventThread.addAfterEachPass { [notices = h.notices, hotplugBatching] in
                notices.release(pacedBy: hotplugBatching, at: .now)
            }
            registration = h
        }
        do {
            try eventThread.start()
        } catch {
            stopMonitoring()
            throw error
        }
        return registration?.notices
    }

    func stopMonitoring() {
        // The thread first: once it has joined, no hotplug callback can be running, so the
        // registration's sink can be released safely.
        eventThread.stop()
        hotplug.withLock { h in
            h?.deregister()
            h = nil
        }
    }

    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> LibUSBDeviceHandle {
        try context.open(bus: bus, address: address, vendor: vendor, product: product)
    }
}
