#if canImport(Glibc)
import Glibc
#endif

/// Writes to a file descriptor with `write(2)`, in lines or in large buffered chunks.
///
/// When the reader of a pipe has gone (EPIPE), the tool exits 0 quietly: `accessoryctl watch
/// | head -1` ends at its next write after `head` is done, with no message.
final class OutputStream {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let lineBuffered: Bool
    private let chunk = 1 << 16


    init(fd: Int32, lineBuffered: Bool) {
        self.fd = fd
        self.lineBuffered = lineBuffered
        buffer.reserveCapacity(chunk * 2)
    }

    deinit { flush() }

    /// Ignore SIGPIPE, so a closed pipe shows up as EPIPE from `write`.
    static func ignoreSigpipe() { signal(SIGPIPE, SIG_IGN) }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if lineBuffered || buffer.count >= chunk { flush() }
    }

    /// Writes `bytes`; a chunk or more with nothing buffered goes straight to `write(2)`,
    /// not through the buffer.
    func write(raw bytes: UnsafeRawBufferPointer) {
        if buffer.isEmpty && bytes.count >= chunk {
            writeAll(bytes)
            return
        }
        buffer.append(contentsOf: bytes)
        if lineBuffered || buffer.count >= chunk { flush() }
    }

    func writeLine(_ text: String) { write(text + "\n") }

    func flush() {
        buffer.withUnsafeBytes { writeAll($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes all of `bytes`, retrying after signals; on an error other than EPIPE the rest
    /// is dropped.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { exit(0) }
                return
            }
            offset += n
        }
    }
}

/// Writes one line to standard error at once (notes, warnings and logs never go to stdout).
func note(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
}
