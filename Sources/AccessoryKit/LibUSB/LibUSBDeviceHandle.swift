internal import CLibUSB
import AccessoryCore
import Dispatch
import Glibc

/// Owns one open `libusb_device_handle`, and the node's file descriptor when the handle
/// wraps one. `libusb_close` (then `close`) runs in `deinit`. The handle keeps its context
/// alive, so `libusb_exit` can never run first.
///
/// `@unchecked Sendable` is safe: every stored property is immutable after `init`; the
/// handle pointer is freed only in `deinit`, when no other reference exists; and libusb's
/// operations on one handle may be called from any thread (libusb locks its claimed-interface
/// bookkeeping and transfer lists internally, and each usbfs ioctl is atomic per descriptor).
final class LibUSBDeviceHandle: USBDeviceConnection, @unchecked Sendable {
    private let raw: OpaquePointer
    let context: LibUSBContext
    /// Bus, address and IDs, for error messages.
    let node: DeviceNode
    /// What libusb knows about the device: descriptors, port chain, speed.
    let record: USBDeviceRecord
    /// The node's descriptor when the handle wraps one; libusb does not close it.
    private let wrappedDescriptor: Int32?

    /// Opens a device from libusb's list.
    init(opening device: OpaquePointer, context: LibUSBContext, node: DeviceNode) throws(AccessoryError) {
        var handle: OpaquePointer?
        try LibUSB.check(libusb_open(device, &handle), "libusb_open", device: node)
        guard let handle else { throw AccessoryError(.io, "libusb_open returned no handle", operation: "libusb_open") }
        guard let record = USBDeviceRecord(device: device, withConfiguration: true) else {
            libusb_close(handle)
            throw AccessoryError(.io, "no device descriptor for \(node)", operation: "libusb_get_device_descriptor")
        }
        self.raw = handle
        self.context = context
        self.node = node
        self.record = record
        self.wrappedDescriptor = nil
    }

    /// Opens the device's `/dev/bus/usb/BBB/DDD` node and wraps it with
    /// `libusb_wrap_sys_device`. This reaches a device that libusb's list has missed.
    ///
    /// - Throws: `.accessDenied` naming the udev rule when the node is not readable and
    ///   writable; `.accessoryDisconnected` when the node is gone; `.notFound` when the node
    ///   now holds a device with other IDs than `node` names.
    init(wrappingNodeOf node: DeviceNode, context: LibUSBContext) throws(AccessoryError) {
        let fd = Glibc.open(node.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw LibUSB.error(errno: errno, operation: "open \(node.path)", device: node) }
        var handle: OpaquePointer?
        let status = context.withUnsafeContext { libusb_wrap_sys_device($0, Int(fd), &handle) }
        guard status == 0, let handle else {
            Glibc.close(fd)
            throw LibUSB.error(status == 0 ? LIBUSB_ERROR_OTHER.rawValue : status, operation: "libusb_wrap_sys_device", device: node)
        }
        guard let device = libusb_get_device(handle),
            let record = USBDeviceRecord(device: device, withConfiguration: true)
        else {
            libusb_close(handle)
            Glibc.close(fd)
            throw AccessoryError(.io, "no device descriptor for \(node)", operation: "libusb_get_device_descriptor")
        }
        if let vendor = node.vendor, let product = node.product,
            record.device.vendor != vendor || record.device.product != product
        {
            libusb_close(handle)
            Glibc.close(fd)
            throw AccessoryError(
                .notFound,
                "\(node.path) now holds \(Hex.four(record.device.vendor)):\(Hex.four(record.device.product)), not \(Hex.four(vendor)):\(Hex.four(product))",
                operation: "open \(node.path)")
        }
        self.raw = handle
        self.context = context
        self.node = node
        self.record = record
        self.wrappedDescriptor = fd
    }

    deinit {
        guard LibUSBEventThread.isCurrent else {
            Self.close(raw, wrappedDescriptor)
            return
        }
        // The last reference went away in a transfer's completion callback. libusb handles
        // events holding the lock that libusb_close takes, so close on another thread.
        let closing = DeferredClose(handle: raw, descriptor: wrappedDescriptor, context: context)
        DispatchQueue.global().async { closing.run() }
    }

    private static func close(_ handle: OpaquePointer, _ descriptor: Int32?) {
        libusb_close(handle)
        if let descriptor { Glibc.close(descriptor) }
    }

    /// A handle on its way to `libusb_close` on another thread.
    ///
    /// `@unchecked Sendable` is safe: the handle's owner is gone, so this is the only
    /// reference to the pointer, and it is used once, by ``run()``. The context reference
    /// keeps `libusb_exit` from running first.
    private struct DeferredClose: @unchecked Sendable {
        let handle: OpaquePointer
        let descriptor: Int32?
        let context: LibUSBContext

        func run() {
            withExtendedLifetime(context) { LibUSBDeviceHandle.close(handle, descriptor) }
        }
    }

    /// Lends the raw handle pointer, for transfer code in this folder. It must not escape
    /// `body`, and `body` must not close it.
    func withUnsafeHandle<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try body(raw)
    }

    /// Whether the handle was made from the device node rather than libusb's list.
    var isWrapped: Bool { wrappedDescriptor != nil }

    func claimInterface(_ number: UInt8) throws(AccessoryError) {
        try LibUSB.check(libusb_claim_interface(raw, Int32(number)), "claim interface \(number)", device: node)
    }

    func releaseInterface(_ number: UInt8) throws(AccessoryError) {
        try LibUSB.check(libusb_release_interface(raw, Int32(number)), "release interface \(number)", device: node)
    }

    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {
        try LibUSB.check(
            libusb_set_interface_alt_setting(raw, Int32(number), Int32(alternate)),
            "set interface \(number) alternate setting \(alternate)", device: node)
    }

    /// Whether a kernel driver is bound to the interface.
    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool {
        let status = libusb_kernel_driver_active(raw, Int32(number))
        if status == LIBUSB_ERROR_NOT_SUPPORTED.rawValue { return false }
        return try LibUSB.check(status, "query kernel driver of interface \(number)", device: node) == 1
    }

    func detachKernelDriver(interface number: UInt8) throws(AccessoryError) {
        try LibUSB.check(libusb_detach_kernel_driver(raw, Int32(number)), "detach kernel driver from interface \(number)", device: node)
    }

    func attachKernelDriver(interface number: UInt8) throws(AccessoryError) {
        try LibUSB.check(libusb_attach_kernel_driver(raw, Int32(number)), "attach kernel driver to interface \(number)", device: node)
    }

    /// Clears a halt (stall) on an endpoint.
    func clearHalt(endpoint: UInt8) throws(AccessoryError) {
        try LibUSB.check(libusb_clear_halt(raw, endpoint), "clear halt on endpoint \(hexByte(endpoint))", device: node)
    }

    /// Resets the device. It may re-enumerate, in which case this handle is dead.
    func reset() throws(AccessoryError) {
        try LibUSB.check(libusb_reset_device(raw), "reset device", device: node)
    }

    /// Reads and decodes one string descriptor.
    /// - Parameter language: a LANGID; `nil` uses the device's first language.
    func stringDescriptor(index: UInt8, language: UInt16? = nil, timeout: Duration = .seconds(1)) throws(AccessoryError) -> String? {
        guard index != 0 else { return nil }
        let langID: UInt16
        if let language {
            langID = language
        } else {
            let zero = try rawStringDescriptor(index: 0, language: 0, timeout: timeout)
            guard let first = USBStringDescriptor.languageIDs(zero).first else { return nil }
            langID = first
        }
        return USBStringDescriptor.decode(try rawStringDescriptor(index: index, language: langID, timeout: timeout))
    }

    func makeEndpointTransfers(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int
    ) throws(AccessoryError) -> any EndpointTransfers {
        LibUSBEndpointTransfers(device: self, endpoint: endpoint, type: type, maxPacketSize: maxPacketSize)
    }

    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        try await LibUSBControlTransfer(device: self, request: request, data: data).run(timeout: timeout)
    }

    /// The active configuration with each interface's string read from the device: the
    /// protocol names of vendor-specific interfaces, when sysfs has no `interface` file.
    /// An interface whose string cannot be read keeps a `nil` name.
    func configurationWithInterfaceNames(timeout: Duration = .milliseconds(500)) -> USBConfiguration? {
        guard var configuration = record.configuration else { return nil }
        guard configuration.interfaces.contains(where: { $0.nameIndex != 0 }),
            let zero = try? rawStringDescriptor(index: 0, language: 0, timeout: timeout),
            let language = USBStringDescriptor.languageIDs(zero).first
        else { return configuration }
        for i in configuration.interfaces.indices where configuration.interfaces[i].nameIndex != 0 {
            configuration.interfaces[i].name = try? stringDescriptor(
                index: configuration.interfaces[i].nameIndex, language: language, timeout: timeout)
        }
        return configuration
    }

    private func rawStringDescriptor(index: UInt8, language: UInt16, timeout: Duration) throws(AccessoryError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 255)
        let status = buffer.withUnsafeMutableBufferPointer { b in
            libusb_control_transfer(
                raw, UInt8(LIBUSB_ENDPOINT_IN.rawValue), UInt8(LIBUSB_REQUEST_GET_DESCRIPTOR.rawValue),
                UInt16(LIBUSB_DT_STRING.rawValue) << 8 | UInt16(index), language, b.baseAddress, UInt16(b.count),
                Self.milliseconds(timeout))
        }
        let n = try LibUSB.check(status, "read string descriptor \(index)", device: node)
        return Array(buffer[..<Int(n)])
    }

    /// One synchronous bulk transfer; returns the bytes moved. For endpoints whose address
    /// has bit 7 set the buffer is filled, otherwise it is sent.
    ///
    /// A timeout after a partial transfer throws `.timeout`; the partial count is lost.
    func bulkTransfer(endpoint: UInt8, _ buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(AccessoryError) -> Int {
        var transferred: Int32 = 0
        let status = libusb_bulk_transfer(
            raw, endpoint, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(clamping: buffer.count),
            &transferred, Self.milliseconds(timeout))
        try LibUSB.check(status, endpointOperation(endpoint), device: node)
        return Int(transferred)
    }

    /// A libusb timeout in milliseconds, rounded down. libusb's 0 means "forever": a
    /// timeout of less than 1 ms (negative included) is 1, and one longer than `UInt32`
    /// milliseconds can hold (about 49.7 days) is 0, forever. Never traps, whatever the
    /// duration (`Duration.components` itself traps beyond `Int64` seconds).
    static func milliseconds(_ d: Duration) -> UInt32 {
        guard d <= ArgumentCheck.longestTimeout else { return 0 }
        guard d >= .milliseconds(1) else { return 1 }
        let (seconds, attoseconds) = d.components
        return UInt32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// `0x81`-style hexadecimal for endpoint addresses.
