internal import CLibUSB

/// What the installed libusb is and can do, for diagnostics.
package enum LibUSBInfo {
    /// The library version, such as `1.0.26.11724`.
    package static var version: String { LibUSB.version }

    /// Whether libusb reports hotplug events on this platform.
    package static var hasHotplug: Bool { libusb_has_capability(UInt32(LIBUSB_CAP_HAS_HOTPLUG.rawValue)) != 0 }

    /// Tries to start a libusb context; returns the error when it cannot.
    package static func startError() -> AccessoryError? {
        do {
            _ = try LibUSBContext()
            return nil
        } catch {
            return error
        }
    }
}
