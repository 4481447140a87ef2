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
package struct SysfsScanner: Sendable {
    package static let defaultRoot = "/sys/bus/usb/devices"

    /// The directory that holds one entry (usually a symlink) per device and interface.
    package var root: String
    /// Whether hubs, root hubs (`usbN`) included, are listed.
    package var includeHubs: Bool
    /// Declared protocols, added to those named by vendor-specific interface strings.
    package var protocolTable: ProtocolTable

    package init(root: String = SysfsScanner.defaultRoot, includeHubs: Bool = false, protocolTable: ProtocolTable = .init()) {
        self.root = root
        self.includeHubs = includeHubs
        self.protocolTable = protocolTable
    }

    /// One scan: the devices, ordered by bus and address, and a note when there is no USB
    /// subsystem at all (which is not an error), or the failure that made it unusable.
    package struct Result: Sendable, Hashable {
        package var devices: [USBDeviceInfo]
        /// Set when the scan found no USB subsystem; a caller may print it as a one-line note.
        package var note: String?
        /// Set when sysfs could not be read (too many open files, permission denied, …):
        /// ``devices`` is then incomplete and must not be taken as the truth.
        package var failure: String?

        package init(devices: [USBDeviceInfo], note: String? = nil, failure: String? = nil) {
            self.devices = devices
            self.note = note
            self.failure = failure
        }
    }

    /// Scans every device directory under ``root``. A directory that vanishes meanwhile is
    /// skipped (a device being removed); any other read failure fails the whole scan.
    package func scan() -> Result {
        scan { read($0) }
    }

    /// A scan that reads each device directory with `read` (a cache's, say).
    /// - Parameter listed: told the device names found, before they are read.
    func scan(
        listed: ([String]) -> Void = { _ in }, read: (String) -> Swift.Result<USBDeviceInfo?, ReadFailure>
    ) -> Result {
        errno = 0
        guard let names = SysfsFiles.list(root) else {
            let code = errno
            if code == ENOENT { return Result(devices: [], note: "no USB subsystem on this machine: \(root) does not exist") }
            return Result(devices: [], failure: "cannot list \(root): \(Self.describe(code))")
        }
        let deviceNames = names.filter { !$0.contains(":") }
        listed(deviceNames)
        var devices: [USBDeviceInfo] = []
        for name in deviceNames {
            switch read(name) {
            case .success(let info?): if includeHubs || !info.isHub { devices.append(info) }
            case .success(nil): continue
            case .failure(let failure): return Result(devices: [], failure: failure.message)
            }
        }
        devices.sort { ($0.descriptor.bus, $0.descriptor.address ?? 0) < ($1.descriptor.bus, $1.descriptor.address ?? 0) }
        return Result(devices: devices)
    }

    /// Reads one device directory, such as `1-1.4` or `usb1`, whether or not it is a hub.
    /// - Returns: `nil` when the directory is missing, unreadable, or has no `busnum` and
    ///   `devnum` (an interface, or a device that is being removed).
    package func device(named name: String) -> USBDeviceInfo? {
        (try? read(name).get()) ?? nil
    }

    /// Why a device directory could not be read, other than its being gone.
    struct ReadFailure: Error {
        var message: String
    }

    /// Reads one device directory: `nil` when it is gone or not a device, a failure when a
    /// file that should be there could not be read.
    ///
    /// - Parameters:
    ///   - devnum: the `devnum` the caller has just read, if it has. The bus number is then
    ///     taken from the name, as the kernel makes it (`B-…`, `usbB`), and neither attribute
    ///     is opened again: in a storm every arrival is read.
    ///   - speed: the device's speed when the caller knows it (libusb's record of an
    ///     arrival, which read the same `speed` file): that file is then not opened again.
    func read(_ name: String, devnum: Int? = nil, speed: USBSpeed? = nil) -> Swift.Result<USBDeviceInfo?, ReadFailure> {
        let dir = root + "/" + name
        func number(_ attribute: String) -> Swift.Result<Int?, ReadFailure> {
            errno = 0
            if let n = SysfsFiles.integer(dir + "/" + attribute, as: Int.self) { return .success(n) }
            let code = errno
            // Gone (a device being removed) or not a device (no such attribute): skip it.
            if code == 0 || code == ENOENT || code == ENODEV || code == ENOTDIR { return .success(nil) }
            return .failure(ReadFailure(message: "cannot read \(dir)/\(attribute): \(Self.describe(code))"))
        }
        if let devnum, let bus = PortChain.bus(inName: name) {
            return .success(device(dir: dir, name: name, bus: bus, address: devnum, speed: speed))
        }
        let bus: Int, address: Int
        switch (number("busnum"), number("devnum")) {
        case (.failure(let f), _), (_, .failure(let f)): return .failure(f)
        case (.success(let b?), .success(let a?)): (bus, address) = (b, a)
        default: return .success(nil)
        }
        return .success(device(dir: dir, name: name, bus: bus, address: address, speed: speed))
    }

    /// Who is on port `name` now, as far as judging an arrival of another instance needs:
    /// bus, `devnum` (the caller's), and the IDs, from one read of `descriptors` (or, should
    /// it not parse, `idVendor` and `idProduct`). `nil` when the bus is not in the name.
    func identity(_ name: String, devnum: Int) -> USBDeviceInfo? {
        guard let bus = PortChain.bus(inName: name) else { return nil }
        let dir = root + "/" + name + "/"
        let parsed = SysfsFiles.read(dir + "descriptors").flatMap { $0.isEmpty ? nil : try? USBDescriptorParser.parse(sysfsDescriptors: $0) }
        let hex16 = { (attribute: String) in SysfsFiles.integer(dir + attribute, radix: 16, as: UInt16.self) }
        let descriptor = AccessoryDescriptor(
            bus: bus, address: devnum, port: name,
            vendor: parsed?.device.vendor ?? hex16("idVendor"), product: parsed?.device.product ?? hex16("idProduct"))
        return USBDeviceInfo(descriptor: descriptor, deviceClass: parsed?.device.deviceClass ?? 0, deviceDescriptor: parsed?.device)
    }


    /// `strerror` with the symbolic name, such as `Too many open files (EMFILE)`.
    static func describe(_ code: Int32) -> String {
        let names: [Int32: String] = [EMFILE: "EMFILE", ENFILE: "ENFILE", EACCES: "EACCES", EPERM: "EPERM", EIO: "EIO", ENOMEM: "ENOMEM", EISDIR: "EISDIR"]
        return String(cString: strerror(code)) + (names[code].map { " (\($0))" } ?? " (errno \(code))")
    }

    /// - Returns: `nil` when the directory is gone (a device removed since its `devnum` was
    ///   read: in a storm, often).
    private func device(dir: String, name: String, bus: Int, address: Int, speed known: USBSpeed?) -> USBDeviceInfo? {
        // The directory is looked up once and its files read relative to it: a dozen path
        // walks fewer per device (and, under umockdev's preload, a dozen redirections).
        // Gone, it is not read further; should it not open for another reason, each file is
        // read by its whole path and fails as it would.
        errno = 0
        let directory = SysfsFiles.openDirectory(dir)
        if directory == nil, errno == ENOENT || errno == ENODEV || errno == ENOTDIR { return nil }
        defer { if let directory { close(directory) } }
        let at = directory ?? AT_FDCWD
        let base = directory == nil ? dir + "/" : ""
        var parsed: USBDescriptors?
        var issues: [USBDescriptorIssue] = []
        if let blob = SysfsFiles.read(base + "descriptors", at: at), !blob.isEmpty {
            do {
                let d = try USBDescriptorParser.parse(sysfsDescriptors: blob)
                parsed = d
                issues = d.issues
            } catch {
                issues = [.unreadableConfiguration(offset: 0, error)]
            }
        }
        let activeValue = SysfsFiles.integer(base + "bConfigurationValue", at: at, as: UInt8.self)
        var configuration = parsed?.configuration(value: activeValue)
        if var c = configuration {
            nameInterfaces(&c, device: name, bus: bus, at: at, base: base)
            configuration = c
        }

        // The IDs and class come from the descriptors already read; the kernel's attribute
        // files, which hold the same values, are read only when the blob could not be parsed
        // (four opens fewer per device: in a storm every arrival is read).
        let hex16 = { (attribute: String) in SysfsFiles.integer(base + attribute, at: at, radix: 16, as: UInt16.self) }
        var descriptor = AccessoryDescriptor(
            bus: bus, address: address, port: name,
            vendor: parsed?.device.vendor ?? hex16("idVendor"),
            product: parsed?.device.product ?? hex16("idProduct"),
            bcdDevice: parsed?.device.bcdDevice ?? hex16("bcdDevice"),
            serial: SysfsFiles.string(base + "serial", at: at),
            manufacturer: SysfsFiles.string(base + "manufacturer", at: at),
            name: SysfsFiles.string(base + "product", at: at))
        let deviceClass = parsed?.device.deviceClass ?? SysfsFiles.integer(base + "bDeviceClass", at: at, radix: 16, as: UInt8.self) ?? 0
        var info = USBDeviceInfo(
            descriptor: descriptor, deviceClass: deviceClass, deviceDescriptor: parsed?.device,
            configuration: configuration,
            speed: known ?? SysfsFiles.string(base + "speed", at: at).flatMap { USBSpeed(sysfs: String($0.trimmingSpaces)) },
            descriptorIssues: issues)
        descriptor.protocols = protocolTable.protocols(for: info)
        info.descriptor = descriptor
        return info
    }

    /// Fills in interface strings from `<dev>/<dev>:<config>.<interface>/interface`, for the
    /// alternate setting each interface currently has.
    /// - Parameters:
    ///   - at: the device directory's descriptor (or `AT_FDCWD`), and `base` what a path
    ///     relative to the device directory is prefixed with (empty, or the directory's path).
    private func nameInterfaces(_ configuration: inout USBConfiguration, device name: String, bus: Int, at: Int32, base: String) {
        // Root hubs are `usbN`, but their interfaces are `N-0:1.0`.
        let prefix = name.hasPrefix("usb") ? "\(bus)-0" : name
        var current: [UInt8: (alternate: UInt8, name: String?)] = [:]
        for i in configuration.interfaces.indices {
            let number = configuration.interfaces[i].number
            if current[number] == nil {
                let dir = base + prefix + ":\(configuration.value).\(number)"
                // An interface with one setting can only be in it: one open fewer.
                let single = !configuration.interfaces.contains { $0.number == number && $0.alternate != 0 }
                let alternate = single ? 0 : SysfsFiles.integer(dir + "/bAlternateSetting", at: at, as: UInt8.self) ?? 0
                current[number] = (alternate, SysfsFiles.string(dir + "/interface", at: at))
            }
            if let (alternate, text) = current[number], alternate == configuration.interfaces[i].alternate {
                configuration.interfaces[i].name = text
            }
        }
    }
}
