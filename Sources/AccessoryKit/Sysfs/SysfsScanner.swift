import AccessoryCore
#if canImport(Glibc)
import Glibc
#endif

/// Reads the OS's own list of USB devices from sysfs: the truth a reconcile compares the
/// registry with.
///
/// libusb's device list is a cache fed by the same hotplug events that can be lost, so the
/// truth comes from `/sys/bus/usb/devices/*` instead. Strings are taken exactly as the kernel
/// wrote them: decoded as UTF-8 with U+FFFD for invalid bytes, and with exactly one trailing
/// newline removed.
public struct SysfsScanner: Sendable {
    public static let defaultRoot = "/sys/bus/usb/devices"

    /// The directory that holds one entry (usually a symlink) per device and interface.
    public var root: String
    /// Whether hubs, root hubs (`usbN`) included, are listed.
    public var includeHubs: Bool
    /// Declared protocols, added to those named by vendor-specific interface strings.
    public var protocolTable: ProtocolTable

    public init(root: String = SysfsScanner.defaultRoot, includeHubs: Bool = false, protocolTable: ProtocolTable = .init()) {
        self.root = root
        self.includeHubs = includeHubs
        self.protocolTable = protocolTable
    }

    /// One scan: the devices, ordered by bus and address, and a note when there is no USB
    /// subsystem at all (which is not an error).
    public struct Result: Sendable, Hashable {
        public var devices: [USBDeviceInfo]
        /// Set when the scan found no USB subsystem; a caller may print it as a one-line note.
        public var note: String?

        public init(devices: [USBDeviceInfo], note: String? = nil) {
            self.devices = devices
            self.note = note
        }
    }

    /// Scans every device directory under ``root``.
    public func scan() -> Result {
        guard let names = SysfsFiles.list(root) else {
            let why = errno == EACCES ? "cannot be read (permission denied)" : "does not exist"
            return Result(devices: [], note: "no USB subsystem on this machine: \(root) \(why)")
        }
        let devices = names.lazy
            .filter { !$0.contains(":") }
            .compactMap { device(named: $0) }
            .filter { includeHubs || !$0.isHub }
            .sorted { ($0.descriptor.bus, $0.descriptor.address ?? 0) < ($1.descriptor.bus, $1.descriptor.address ?? 0) }
        return Result(devices: devices)
    }

    /// Reads one device directory, such as `1-1.4` or `usb1`, whether or not it is a hub.
    /// - Returns: `nil` when the directory is missing or has no `busnum` and `devnum`
    ///   (an interface, or a device that is being removed).
    public func device(named name: String) -> USBDeviceInfo? {
        let dir = root + "/" + name
        guard let bus = SysfsFiles.integer(dir + "/busnum", as: Int.self),
            let address = SysfsFiles.integer(dir + "/devnum", as: Int.self)
        else { return nil }

        var parsed: USBDescriptors?
        var issues: [USBDescriptorIssue] = []
        if let blob = SysfsFiles.read(dir + "/descriptors"), !blob.isEmpty {
            do {
                let d = try USBDescriptorParser.parse(sysfsDescriptors: blob)
                parsed = d
                issues = d.issues
            } catch {
                issues = [.unreadableConfiguration(offset: 0, error)]
            }
        }
        let activeValue = SysfsFiles.integer(dir + "/bConfigurationValue", as: UInt8.self)
        var configuration = parsed?.configuration(value: activeValue)
        if var c = configuration {
            nameInterfaces(&c, device: name, bus: bus)
            configuration = c
        }

        let hex16 = { (attribute: String) in SysfsFiles.integer(dir + "/" + attribute, radix: 16, as: UInt16.self) }
        var descriptor = AccessoryDescriptor(
            bus: bus, address: address, port: name,
            vendor: hex16("idVendor") ?? parsed?.device.vendor,
            product: hex16("idProduct") ?? parsed?.device.product,
            bcdDevice: hex16("bcdDevice") ?? parsed?.device.bcdDevice,
            serial: SysfsFiles.string(dir + "/serial"),
            manufacturer: SysfsFiles.string(dir + "/manufacturer"),
            name: SysfsFiles.string(dir + "/product"))
        let deviceClass = SysfsFiles.integer(dir + "/bDeviceClass", radix: 16, as: UInt8.self) ?? parsed?.device.deviceClass ?? 0
        var info = USBDeviceInfo(
            descriptor: descriptor, deviceClass: deviceClass, deviceDescriptor: parsed?.device,
            configuration: configuration, speed: SysfsFiles.string(dir + "/speed").flatMap { USBSpeed(sysfs: String($0.trimmingSpaces)) },
            descriptorIssues: issues)
        descriptor.protocols = protocolTable.protocols(for: info)
        info.descriptor = descriptor
        return info
    }

    /// Fills in interface strings from `<dev>/<dev>:<config>.<interface>/interface`, for the
    /// alternate setting each interface currently has.
    private func nameInterfaces(_ configuration: inout USBConfiguration, device name: String, bus: Int) {
        // Root hubs are `usbN`, but their interfaces are `N-0:1.0`.
        let prefix = name.hasPrefix("usb") ? "\(bus)-0" : name
        var current: [UInt8: (alternate: UInt8, name: String?)] = [:]
        for i in configuration.interfaces.indices {
            let number = configuration.interfaces[i].number
            if current[number] == nil {
                let dir = root + "/" + name + "/" + prefix + ":\(configuration.value).\(number)"
                let alternate = SysfsFiles.integer(dir + "/bAlternateSetting", as: UInt8.self) ?? 0
                current[number] = (alternate, SysfsFiles.string(dir + "/interface"))
            }
            if let (alternate, text) = current[number], alternate == configuration.interfaces[i].alternate {
                configuration.interfaces[i].name = text
            }
        }
    }
}
