import AccessoryCore
import Glibc

/// A write to a ``FileDescriptorSink`` failed.
public struct TraceSinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` value.
    public var code: Int32

    package init(code: Int32) {
        self.code = code
    }

    /// The reader of a pipe has gone away (`EPIPE`).
    public var isBrokenPipe: Bool { code == EPIPE }

    public var description: String { "write failed: \(String(cString: strerror(code)))" }
}
