/// A transfer's sign that its device may be gone: NO_DEVICE (ESHUTDOWN or ENODEV) or, as
/// IN transfers end on a real unplug before sysfs and the hotplug event catch up, a transfer
/// error (EPROTO). The manager confirms it against sysfs and its hotplug events.
package struct DeviceGoneSign: Hashable, Sendable {
    /// The operation that saw it, such as `bulk IN 0x81`.
    package var operation: String
    /// `.noDevice` or `.error`.
    package var status: TransferStatus

    package init(operation: String, status: TransferStatus = .noDevice) {
        self.operation = operation
        self.status = status
    }

    /// `NO_DEVICE`, or what the transfer error was.
    package var seen: String {
        status == .noDevice ? "NO_DEVICE" : "a transfer error (LIBUSB_TRANSFER_ERROR)"
    }
}
