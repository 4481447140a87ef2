import AccessoryCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A ``SysfsScanner`` that remembers what each device directory held, so that looking at a
/// device that has not changed costs one small read (its `devnum`), not the fifteen files
/// and the descriptors of a full read.
///
/// A directory's contents are tied to its instance: the kernel gives a re-enumerated device
/// a new directory under the same name with a new device number, so a name and a number
/// seen before mean the same instance. (After 127 re-enumerations on one port within one
/// look the number can come round again; the devices are then the same model with the same
/// serial, so what was read still holds.) A device read without its interfaces (before
/// SET_CONFIGURATION) is not remembered, so a later look sees them. A farm's periodic full
/// scan thus costs one directory listing and one small read per device.
final class SysfsCache: Sendable {
    let scanner: SysfsScanner
    private let entries = Mutex<[String: USBDeviceInfo]>([:])

    init(_ scanner: SysfsScanner) {
        self.scanner = scanner
    }

    /// Every device, as ``SysfsScanner/scan()``; devices no longer listed are forgotten.
    func scan() -> SysfsScanner.Result {
        scanner.scan(
            listed: { names in
                let present = Set(names)
                entries.withLock { e in e = e.filter { present.contains($0.key) } }
            },
            read: read)
    }

    /// One device directory, as ``SysfsScanner/device(named:)``.
    func device(named name: String) -> USBDeviceInfo? {
        (try? read(name).get()) ?? nil
    }

    /// How many device directories are remembered.
    var count: Int { entries.withLock { $0.count } }

    private func read(_ name: String) -> Swift.Result<USBDeviceInfo?, SysfsScanner.ReadFailure> {
        errno = 0
        let number = SysfsFiles.integer(scanner.root + "/" + name + "/devnum", as: Int.self)
        if number == nil, errno == ENOENT || errno == ENODEV || errno == ENOTDIR {
            // Gone (a device being removed), or not a device: nothing more to open.
            entries.withLock { _ = $0.removeValue(forKey: name) }
            return .success(nil)
        }
        if let number, let cached = entries.withLock({ $0[name] }), cached.descriptor.address == number {
            return .success(cached)
        }
        let fresh = number.map { scanner.read(name, devnum: $0) } ?? scanner.read(name)
        entries.withLock { e in
            if case .success(let info?) = fresh, let configuration = info.configuration, !configuration.interfaces.isEmpty {
                e[name] = info
            } else {
                e[name] = nil
            }
        }
        return fresh
    }
}
