internal import CLibUSB
import AccessoryCore
import Glibc

/// The seam between Swift and libusb: the one place where a libusb status becomes an
/// ``AccessoryError``, plus small conversions used by the rest of this folder.
enum LibUSB {
    /// Returns `status` when it is not negative, and throws the matching error otherwise.
    ///
    /// - Parameters:
    ///   - operation: the libusb call or USB operation, for the error message.
    ///   - device: the device concerned, so that an access error names its udev rule.
    @discardableResult
    static func check(
        _ status: Int32, _ operation: @autoclosure () -> String, device: DeviceNode? = nil
    ) throws(AccessoryError) -> Int32 {
        guard status < 0 else { return status }
        throw error(status, operation: operation(), device: device)
    }

    /// The error for a negative libusb status. The only switch over libusb error codes.
    ///
    /// `LIBUSB_ERROR_INVALID_PARAM` can only come from a bug of ours, so it stops the process.
    static func error(_ status: Int32, operation: String, device: DeviceNode? = nil, rawValue: Int32? = nil) -> AccessoryError {
        let raw = rawValue ?? status
        let name = String(cString: libusb_error_name(status))
        let on = device.map { " on \($0)" } ?? ""
        switch libusb_error(rawValue: status) {
        case LIBUSB_ERROR_ACCESS:
            return AccessoryError(.accessDenied, accessDeniedMessage(device, operation: operation), operation: operation, rawValue: raw)
        case LIBUSB_ERROR_NO_DEVICE:
            return .noDevice(
                operation: operation, device: device?.description ?? "its node", seen: "\(operation) returned \(name)", rawValue: raw)
        case LIBUSB_ERROR_BUSY:
            return AccessoryError(
                .busy, "the device or interface is busy\(on); another process or session holds it",
                operation: operation, rawValue: raw)
        case LIBUSB_ERROR_TIMEOUT:
            return AccessoryError(.timeout, "\(operation) timed out\(on)", operation: operation, rawValue: raw)
        case LIBUSB_ERROR_PIPE:
            return AccessoryError(.stall, "the endpoint stalled\(on); call clearHalt to go on", operation: operation, rawValue: raw)
        case LIBUSB_ERROR_OVERFLOW:
            return AccessoryError(.overflow, "the device sent more data than asked for\(on)", operation: operation, rawValue: raw)
        case LIBUSB_ERROR_NOT_FOUND:
            return AccessoryError(.notFound, "not found\(on): \(operation) returned \(name)", operation: operation, rawValue: raw)
        case LIBUSB_ERROR_INTERRUPTED:
            return AccessoryError(.cancelled, "\(operation) was interrupted\(on)", operation: operation, rawValue: raw)
        case LIBUSB_ERROR_INVALID_PARAM:
            // libusb refuses, for one, an interface number of 32 or more (usbfs's claim mask):
            // a device can declare one, so this is the device's doing, never a reason to crash.
            return AccessoryError(
                .io, "\(operation) was refused by libusb\(on): LIBUSB_ERROR_INVALID_PARAM (a parameter it does not support)",
                operation: operation, rawValue: raw)
        default:
            // IO, NO_MEM, NOT_SUPPORTED, OTHER and anything newer.
            return AccessoryError(.io, "\(operation) failed\(on): \(name)", operation: operation, rawValue: raw)
        }
    }

    /// The error for a failed system call on a device node: mapped onto the libusb code that
    /// means the same thing, then through ``error(_:operation:device:rawValue:)``.
    static func error(errno code: Int32, operation: String, device: DeviceNode?) -> AccessoryError {
        let status: libusb_error
        switch code {
        case EACCES, EPERM: status = LIBUSB_ERROR_ACCESS
        case ENOENT, ENODEV, ENXIO: status = LIBUSB_ERROR_NO_DEVICE
        case EBUSY: status = LIBUSB_ERROR_BUSY
        case ETIMEDOUT: status = LIBUSB_ERROR_TIMEOUT
        case EINTR: status = LIBUSB_ERROR_INTERRUPTED
        case ENOMEM: status = LIBUSB_ERROR_NO_MEM
        default: status = LIBUSB_ERROR_IO
        }
        return error(status.rawValue, operation: operation, device: device, rawValue: code)
    }

    static func accessDeniedMessage(_ device: DeviceNode?, operation: String) -> String {
        guard let device else {
            return "no permission for \(operation); install a udev rule: accessoryctl udev-rule --vendor VID --product PID | sudo tee \(udevRulePath)"
        }
        let vendor = device.vendor.map(Hex.four) ?? "VID"
        let product = device.product.map { " --product \(Hex.four($0))" } ?? ""
        return "no permission to open \(device.path); install a udev rule: accessoryctl udev-rule --vendor \(vendor)\(product) | sudo tee \(udevRulePath)"
    }

    static let udevRulePath = "/etc/udev/rules.d/70-accessorykit.rules"

    /// The libusb library version, such as `1.0.26.11724`.
    static var version: String {
        let v = libusb_get_version().pointee
        return "\(v.major).\(v.minor).\(v.micro).\(v.nano)"
    }
}
