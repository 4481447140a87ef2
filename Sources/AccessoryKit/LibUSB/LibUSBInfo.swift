internal import CLibUSB

/// What the installed libusb is and can do, for diagnostics.
public enum LibUSBInfo {
    /// The library version, such as `1.0.26.11724`.
    public static var version: String { LibUSB.version }

    /// Whether libusb reports hotplug events on this platform.
    public static var hasHotplug: Bool { libusb_has_capability(UInt32(LIBUSB_CAP_HAS_HOTPLUG.rawValue)) != 0 }

    /// Tries to start a libusb context; returns the error when it cannot.
    public static func startError() -> AccessoryError? {
        do {
            _ = try LibUSBContext()
            return nil
        } catch {
            return error
        }
    }
}
