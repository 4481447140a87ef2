internal import CLibUSB
import AccessoryCore
import Glibc

/// Owns one `libusb_context`. `libusb_exit` runs in `deinit`, after every handle, hotplug
/// registration and event thread that holds a reference to this context is gone.
///
/// `@unchecked Sendable` is safe: the only stored property is the context pointer, which is
/// immutable after `init` and freed only in `deinit`, when no other reference exists.
/// libusb's context operations are thread-safe (libusb locks its device list, hotplug
/// callback list and event handling internally), so any thread may use the pointer.
final class LibUSBContext: @unchecked Sendable {
    private let raw: OpaquePointer

    /// Creates a context.
    ///
    /// - Throws: ``AccessoryError`` when libusb cannot start, for example on a machine
    ///   without usbfs (`/dev/bus/usb`): then `code` is `.io`.
    init() throws(AccessoryError) {
        var context: OpaquePointer?
        try LibUSB.check(libusb_init(&context), "libusb_init")
        guard let context else { throw AccessoryError(.io, "libusb_init returned no context", operation: "libusb_init") }
        raw = context
    }

    deinit {
        if Self.exitFreesHubsEarly {
            // libusb 1.0.26's usbi_hotplug_exit (called by libusb_exit) unlinks a device's
            // parent from the device list when the parent's reference count is 1, even when
            // the parent was unlinked already (it left while a child stayed listed): a
            // list_del on a dead node, which crashed `accessoryctl watch` at shutdown.
            // Holding one more reference on each parent of a listed device keeps it out of
            // that path. libusb_exit then detaches them from the context; the cost is
            // leaking those few parents (hubs) once, at teardown. The list's own references
            // are dropped: a device that is no one's parent is freed as usual, so a context
            // torn down with no accessory attached leaks nothing.
            var list: UnsafeMutablePointer<OpaquePointer?>?
            let count = libusb_get_device_list(raw, &list)
            if count >= 0, let list {
                for i in 0..<count {
                    var parent = list[i].flatMap { libusb_get_parent($0) }
                    while let p = parent {
                        _ = libusb_ref_device(p)
                        parent = libusb_get_parent(p)
                    }
                }
                libusb_free_device_list(list, 1)
            }
        }
        libusb_exit(raw)
    }

    /// Whether this libusb has the `usbi_hotplug_exit` use-after-free (before 1.0.27).
    private static let exitFreesHubsEarly: Bool = {
        let v = libusb_get_version().pointee
        return (v.major, v.minor, v.micro) < (1, 0, 27)
    }()

    /// Whether this libusb can report hotplug events on this platform.
    var hasHotplug: Bool { libusb_has_capability(UInt32(LIBUSB_CAP_HAS_HOTPLUG.rawValue)) != 0 }

    /// The libusb library version, such as `1.0.26.11724`.
    var version: String { LibUSB.version }

    /// Lends the raw context pointer. It must not escape `body`.
    func withUnsafeContext<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try body(raw)
    }

    /// Wakes a thread blocked in `libusb_handle_events*` on this context.
    func interruptEventHandler() {
        libusb_interrupt_event_handler(raw)
    }

    /// Every device in libusb's list, with its descriptors.
    ///
    /// With hotplug support this list is libusb's cache, kept up to date by the same
    /// hotplug events that can be lost; it is not the OS truth (see ``SysfsScanner``).
    func devices() throws(AccessoryError) -> [USBDeviceRecord] {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = try LibUSB.check(Int32(truncatingIfNeeded: libusb_get_device_list(raw, &list)), "libusb_get_device_list")
        guard let list else { return [] }
        defer { libusb_free_device_list(list, 1) }
        var records: [USBDeviceRecord] = []
        records.reserveCapacity(Int(count))
        for i in 0..<Int(count) {
            guard let device = list[i] else { continue }
            if let record = USBDeviceRecord(device: device, withConfiguration: true) { records.append(record) }
        }
        return records
    }

    /// Opens the device at a bus and address.
    ///
    /// Looks in libusb's list first. When the list has missed the device (a lost hotplug
    /// event), opens the `/dev/bus/usb/BBB/DDD` node itself and wraps it with
    /// `libusb_wrap_sys_device`, so a ghost never needs a restart to cure.
    /// - Parameters:
    ///   - expected: VID and PID the device must have; a device with others is not opened.
    func open(bus: Int, address: Int, vendor: UInt16? = nil, product: UInt16? = nil) throws(AccessoryError) -> LibUSBDeviceHandle {
        let node = DeviceNode(bus: bus, address: address, vendor: vendor, product: product)
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(raw, &list)
        if count >= 0, let list {
            defer { libusb_free_device_list(list, 1) }
            for i in 0..<Int(count) {
                guard let device = list[i], Int(libusb_get_bus_number(device)) == bus,
                    Int(libusb_get_device_address(device)) == address
                else { continue }
                var descriptor = libusb_device_descriptor()
                guard libusb_get_device_descriptor(device, &descriptor) == 0,
                    vendor.map({ $0 == descriptor.idVendor }) ?? true,
                    product.map({ $0 == descriptor.idProduct }) ?? true
                else { break }
                return try LibUSBDeviceHandle(opening: device, context: self, node: node)
            }
        }
        return try LibUSBDeviceHandle(wrappingNodeOf: node, context: self)
    }
}
