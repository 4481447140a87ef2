import AccessoryCore
import Glibc

/// Reads a file descriptor (or bytes in memory) one line at a time, in chunks, never holding
/// more than the longest line plus one chunk: the byte-level reading that ``TraceReader`` and
/// ``UdevadmReader`` share.
///
/// A line is a byte range of ``buffer``, valid until the next call of ``nextLine()``.
struct LineReader: ~Copyable, Sendable {
    /// The name used in errors: the path, or what the caller chose.
    let name: String
    /// The bytes read; `nextLine()` returns ranges of it.
    private(set) var buffer: [UInt8]
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// The unconsumed bytes are `buffer[start..<end]`; `buffer[start..<scanned]` has no newline.
    private var start = 0
    private var scanned = 0
    private var end = 0
    private var atEOF: Bool
    /// How many bytes have been read in all.
    private(set) var bytesRead = 0

    /// Reads `fd`, closing it when done if `owns`.
    init(fd: Int32, owns: Bool, name: String, chunkSize: Int) {
        self.name = name
        self.fd = fd
        self.ownsDescriptor = owns
        self.buffer = [UInt8](repeating: 0, count: max(chunkSize, 16))
        self.atEOF = fd < 0
    }

    /// Reads bytes held in memory.
    init(bytes: [UInt8], name: String) {
        self.name = name
        self.fd = -1
        self.ownsDescriptor = false
        self.buffer = bytes
        self.end = bytes.count
        self.bytesRead = bytes.count
        self.atEOF = true
    }

    /// Opens `path` for reading. A file that cannot be opened reads as empty and leaves
    /// ``openError`` set, for the caller to throw.
    init(path: String, chunkSize: Int) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        let reason = fd < 0 ? "cannot open: \(String(cString: strerror(errno)))" : nil
        self.init(fd: fd, owns: true, name: path, chunkSize: fd >= 0 ? chunkSize : 0)
        openError = reason.map { TraceError(file: path, line: nil, reason: $0) }
    }

    /// Why ``init(path:chunkSize:)`` could not open its file.
    private(set) var openError: TraceError?

    deinit {
        if ownsDescriptor && fd >= 0 { close(fd) }
    }

    /// The byte range of the next line in ``buffer``, without its newline, reading more as
    /// needed. `terminated` is false for a last line that has no newline.
    mutating func nextLine() throws(TraceError) -> (start: Int, end: Int, terminated: Bool)? {
        while true {
            if scanned < end {
                let newline = buffer.withUnsafeBytes { raw in
                    memchr(raw.baseAddress! + scanned, 0x0A, end - scanned)
                        .map { raw.baseAddress!.distance(to: UnsafeRawPointer($0)) }
                }
                if let newline {
                    let line = (start, newline, true)
                    start = newline + 1
                    scanned = start
                    return line
                }
                scanned = end
            }
            if atEOF {
                guard start < end else { return nil }
                let line = (start, end, false)
                start = end
                return line
            }
            try fill()
        }
    }

    /// Moves the partial line to the front of the buffer (growing it for a long line) and
    /// reads the next chunk.
    private mutating func fill() throws(TraceError) {
        if start > 0 {
            let count = end - start
            let from = start
            buffer.withUnsafeMutableBytes { raw in
                if count > 0 { memmove(raw.baseAddress!, raw.baseAddress! + from, count) }
            }
            scanned -= start
            end -= start
            start = 0
        }
        if end == buffer.count {
            buffer.append(contentsOf: repeatElement(0, count: buffer.count))
        }
        let fd = self.fd
        let from = end
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + from, raw.count - from) }
            if n > 0 {
                end += n
                bytesRead += n
                return
            }
            if n == 0 {
                atEOF = true
                return
            }
            if errno == EINTR { continue }
            throw TraceError(file: name, line: nil, reason: "read failed: \(String(cString: strerror(errno)))")
        }
    }
}
