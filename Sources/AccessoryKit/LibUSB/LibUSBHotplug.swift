internal import CLibUSB
import AccessoryCore
import Synchronization

/// A hotplug callback registration on a context. Notices arrive on ``notices``, an
/// unbounded queue, so the event thread never waits for a consumer.
///
/// The C callback only copies the device's cached facts into a ``HotplugNotice`` and yields
/// it: no I/O, no call into libusb beyond cached getters, no user code.
final class LibUSBHotplug: Sendable {
    /// The receiving end of the callback. Retained by the registration while libusb may call it.
    private final class Sink: Sendable {
        let notices: HotplugNoticeQueue
        init(_ notices: HotplugNoticeQueue) { self.notices = notices }
    }

    private struct Registration: Sendable {
        var handle: Int32
        /// The sink's retained pointer as an integer, released on deregistration.
        var sink: UInt
    }

    let context: LibUSBContext
    let notices = HotplugNoticeQueue()
    private let registration = Mutex<Registration?>(nil)

    /// Registers for ARRIVED and LEFT of every device. Devices already present are not
    /// reported (no ENUMERATE flag): subscribe first, then take a snapshot.
    init(context: LibUSBContext) throws(AccessoryError) {
        self.context = context
        let sink = Unmanaged.passRetained(Sink(notices))
        var handle: libusb_hotplug_callback_handle = 0
        let events = Int32(LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED.rawValue | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT.rawValue)
        let status = context.withUnsafeContext { ctx in
            libusb_hotplug_register_callback(
                ctx, events, 0, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
                { _, device, event, userData in
                    // Runs on the event thread: copy cached facts, enqueue, return.
                    guard let device, let userData,
                        let record = USBDeviceRecord(device: device, withConfiguration: false)
                    else { return 0 }
                    let sink = Unmanaged<Sink>.fromOpaque(userData).takeUnretainedValue()
                    let kind: HotplugNotice.Kind = event == LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED ? .arrived : .left
                    // On the event thread, which releases the batch after its pass.
                    let notice = HotplugNotice(kind: kind, device: record)
                    if LibUSBEventThread.isCurrent { sink.notices.hold(notice) } else { sink.notices.yield(notice) }
                    return 0
                }, sink.toOpaque(), &handle)
        }
        guard status == 0 else {
            sink.release()
            notices.finish()
            throw LibUSB.error(status, operation: "libusb_hotplug_register_callback")
        }
        registration.withLock { $0 = Registration(handle: handle, sink: UInt(bitPattern: sink.toOpaque())) }
    }

    deinit {
        deregister()
    }

    /// Deregisters the callback and finishes ``notices``. Idempotent.
    ///
    /// Call it after the event thread has stopped: libusb runs callbacks without holding
    /// its lock, so only a stopped event thread guarantees the callback is not running
    /// when its sink is released.
    func deregister() {
        guard let r = registration.withLock({ r -> Registration? in defer { r = nil }; return r }) else { return }
        context.withUnsafeContext { libusb_hotplug_deregister_callback($0, r.handle) }
        if let pointer = UnsafeMutableRawPointer(bitPattern: r.sink) {
            Unmanaged<Sink>.fromOpaque(pointer).release()
        }
        notices.finish()
    }
}
