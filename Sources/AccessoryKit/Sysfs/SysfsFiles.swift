import Glibc

/// Plain POSIX reads of sysfs. Under umockdev's preload these calls are redirected into the
/// testbed, so the same paths work there.
enum SysfsFiles {
    /// The names in a directory, without `.` and `..`; `nil` when it cannot be opened.
    static func list(_ path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The last path component of a symlink's target (such as a driver's name); `nil` when
    /// `path` is not a symlink.
    static func linkTarget(_ path: String) -> String? {
        link(path)?.split(separator: "/").last.map(String.init)
    }

    /// A symlink's whole target, as `readlink` gives it.
    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `path` exists.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Opens a directory for reading the files in it by relative path (`at:` below): one
    /// path lookup for the directory, not one per file. `nil` when it cannot be opened.
    static func openDirectory(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// Which file a read came from: device and inode numbers and change time, as `fstat`
    /// gives them for the descriptor that was read. sysfs (kernfs) numbers every node it
    /// creates anew, so a device directory made for another instance has other stamps.
    struct FileStamp: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        var changed: Int
        var changedNanoseconds: Int

        init(_ st: stat) {
            self.device = UInt64(st.st_dev)
            self.inode = UInt64(st.st_ino)
            self.changed = st.st_ctim.tv_sec
            self.changedNanoseconds = st.st_ctim.tv_nsec
        }
    }

    /// The stamp of the file at `path`, from `stat` (no open, read or close); `nil` when it
    /// cannot be found, with `errno` saying why.
    static func stamp(_ path: String) -> FileStamp? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileStamp(st)
    }

    /// A file's bytes, up to `limit`; `nil` when it cannot be opened or read.
    /// - Parameters:
    ///   - directory: a descriptor from ``openDirectory(_:)`` that a relative `path` is
    ///     taken from; by default the working directory.
    ///   - untilEndOfFile: read until a read returns nothing, for a file that is not a sysfs
    ///     attribute.
    ///   - stamp: set to the stamp of the file read, when asked for (and `fstat` succeeds).
    static func read(
        _ path: String, at directory: Int32 = AT_FDCWD, limit: Int = 1 << 16, untilEndOfFile: Bool = false,
        stamp: UnsafeMutablePointer<FileStamp?>? = nil
    ) -> [UInt8]? {
        let fd = openat(directory, path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if let stamp {
            var st = stat()
            stamp.pointee = fstat(fd, &st) == 0 ? FileStamp(st) : nil
        }
        var bytes: [UInt8] = []
        // Attributes are small: one read into a buffer on the stack, and one exact copy.
        let complete = withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { chunk -> Bool in
            while bytes.count < limit {
                let n = Glibc.read(fd, chunk.baseAddress, chunk.count)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                if n == 0 { break }
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<n]))
                // A sysfs attribute comes whole from its first read: a short read is the end,
                // and asking again for the end-of-file would double the system calls.
                if n < chunk.count && !untilEndOfFile { break }
            }
            return true
        }
        guard complete else { return nil }
        return bytes.count > limit ? Array(bytes[..<limit]) : bytes
    }

    /// A text attribute exactly as the kernel wrote it: UTF-8 with U+FFFD for invalid bytes,
    /// minus exactly one trailing newline and nothing else.
    static func string(_ path: String, at directory: Int32 = AT_FDCWD, stamp: UnsafeMutablePointer<FileStamp?>? = nil) -> String? {
        guard var bytes = read(path, at: directory, stamp: stamp) else { return nil }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A numeric attribute, with surrounding whitespace ignored.
    static func integer<T: FixedWidthInteger>(
        _ path: String, at directory: Int32 = AT_FDCWD, radix: Int = 10, as: T.Type = T.self, stamp: UnsafeMutablePointer<FileStamp?>? = nil
    ) -> T? {
        guard let text = string(path, at: directory, stamp: stamp) else { return nil }
        return T(text.trimmingSpaces, radix: radix)
    }
}

extension String {
    /// Without leading and trailing ASCII spaces, tabs and newlines.
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return self[first...last]
    }
}
