import AccessoryCore
import Glibc

/// A sink that writes straight to a file descriptor with `write(2)`, unbuffered.
///
/// It does not own the descriptor. Interrupted writes are retried; other failures throw
/// ``TraceSinkError`` (``TraceSinkError/isBrokenPipe`` tells a reader that went away).
public struct FileDescriptorSink: TraceSink, Sendable {
    /// The descriptor written to (not closed by the sink).
    public let fileDescriptor: Int32

    /// A sink that writes to `fileDescriptor`.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Standard output.
    package static var standardOutput: FileDescriptorSink { FileDescriptorSink(fileDescriptor: 1) }

    /// Writes all of `bytes` with `write(2)`, retrying interrupted writes.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard var p = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let n = systemWrite(fileDescriptor, p, remaining)
            if n < 0 {
                if errno == EINTR { continue }
                throw TraceSinkError(code: errno)
            }
            p += n
            remaining -= n
        }
    }
}

/// `write(2)`, out of reach of the method of the same name.
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, p, count)
}
