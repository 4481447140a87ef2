import AccessoryCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A ``SysfsScanner`` that remembers what each device directory held, so that looking at a
/// device that has not changed costs one small read (its `devnum`), or only a `stat` of it,
/// not the fifteen files and the descriptors of a full read.
///
/// What was read is tied to one instance: the directory's name, its `devnum`, and the stamp
/// of the `devnum` file read (inode and change time, from `fstat` on the same descriptor).
/// A name and a number are not enough: once a bus's addresses wrap (127 arrivals, as in a
/// storm), another device on the same port can be given the same number. The kernel makes a
/// new directory, and new attribute files, for every instance, and kernfs numbers every node
/// it creates anew (a 64-bit ID, never reused while the system runs), so another instance's
/// `devnum` has another inode; on a disk-backed tree (a testbed) an inode can be reused, and
/// then its change time differs, unless the old file was made, read, removed and the new one
/// made within one tick of the file system's clock.
///
/// So a stamp alone names the instance once its change time was over a second old when it
/// was read: any later file has a later change time. Such an entry costs one `stat` (no open,
/// read or close; a farm's periodic full scan looks at every device this way). A younger
/// entry (a storm's port) still has its `devnum` read and compared. A device read without
/// its interfaces (before SET_CONFIGURATION) is not remembered, so a later look sees them.
final class SysfsCache: Sendable {
    let scanner: SysfsScanner
    private let entries = Mutex<[String: Entry]>([:])
    /// The real-time clock, in seconds (a test moves it).
    private let realTime: @Sendable () -> Int
    /// How many looks were answered by a `stat` alone.
    private let statHits = Atomic<Int>(0)
    /// How many arrivals were judged from their port's IDs alone.
    private let identityReads = Atomic<Int>(0)

    /// What was read from one directory, and the instance it was read from.
    private struct Entry: Sendable {
        var info: USBDeviceInfo
        var devnum: Int
        var stamp: SysfsFiles.FileStamp
        /// Whether the stamp alone names the instance (its change time was over a second old
        /// when it was read).
        var stampIsEnough: Bool
    }

    init(_ scanner: SysfsScanner, realTime: @escaping @Sendable () -> Int = SysfsCache.realTimeNow) {
        self.scanner = scanner
        self.realTime = realTime
    }

    /// `CLOCK_REALTIME`'s seconds: the clock a file's change time is taken from.
    static func realTimeNow() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now.tv_sec
    }

    /// Every device, as ``SysfsScanner/scan()``; devices no longer listed are forgotten.
    func scan() -> SysfsScanner.Result {
        scanner.scan(
            listed: { names in
                let present = Set(names)
                entries.withLock { e in e = e.filter { present.contains($0.key) } }
            },
            read: { read($0) })
    }

    /// One device directory, as ``SysfsScanner/device(named:)``.
    func device(named name: String) -> USBDeviceInfo? {
        (try? read(name).get()) ?? nil
    }

    /// Port `name` as judging an arrival of the instance at `address` needs it, with
    /// `speed` from libusb's record (its `speed` file not opened again). When the port's
    /// `devnum` is not `address`, another instance holds it and the arrival cannot be the
    /// live one, so only that instance's IDs are read (``SysfsScanner/identity(_:devnum:)``),
    /// not the directory; otherwise as ``device(named:)``.
    func arrival(named name: String, address: Int?, speed: USBSpeed?) -> USBDeviceInfo? {
        (try? read(name, arrivalAddress: address, speed: speed).get()) ?? nil
    }

    /// How many arrivals were judged from their port's IDs alone.
    var identityOnlyReads: Int { identityReads.load(ordering: .relaxed) }

    /// How many device directories are remembered.
    var count: Int { entries.withLock { $0.count } }

    /// How many looks a `stat` alone has answered.
    var statOnlyHits: Int { statHits.load(ordering: .relaxed) }

    private func read(
        _ name: String, arrivalAddress: Int? = nil, speed: USBSpeed? = nil
    ) -> Swift.Result<USBDeviceInfo?, SysfsScanner.ReadFailure> {
        let path = scanner.root + "/" + name + "/devnum"
        errno = 0
        if let cached = entries.withLock({ $0[name] }), cached.stampIsEnough {
            if let now = SysfsFiles.stamp(path) {
                if now == cached.stamp {
                    statHits.add(1, ordering: .relaxed)
                    return .success(cached.info)
                }
            } else if errno == ENOENT || errno == ENODEV || errno == ENOTDIR {
                entries.withLock { _ = $0.removeValue(forKey: name) }
                return .success(nil)
            }
            errno = 0
        }
        var stamp: SysfsFiles.FileStamp?
        let number = SysfsFiles.integer(path, as: Int.self, stamp: &stamp)
        if number == nil, errno == ENOENT || errno == ENODEV || errno == ENOTDIR {
            // Gone (a device being removed), or not a device: nothing more to open.
            entries.withLock { _ = $0.removeValue(forKey: name) }
            return .success(nil)
        }
        if let number, let stamp, let cached = entries.withLock({ $0[name] }), cached.devnum == number, cached.stamp == stamp {
            return .success(cached.info)
        }
        if let arrivalAddress, let number, number != arrivalAddress, let identity = scanner.identity(name, devnum: number) {
            identityReads.add(1, ordering: .relaxed)
            return .success(identity)
        }
        let fresh = number.map { scanner.read(name, devnum: $0, speed: speed) } ?? scanner.read(name, speed: speed)
        let enough = stamp.map { realTime() - $0.changed > 1 } ?? false
        entries.withLock { e in
            if case .success(let info?) = fresh, let number, let stamp, let configuration = info.configuration,
                !configuration.interfaces.isEmpty
            {
                e[name] = Entry(info: info, devnum: number, stamp: stamp, stampIsEnough: enough)
            } else {
                e[name] = nil
            }
        }
        return fresh
    }
}
