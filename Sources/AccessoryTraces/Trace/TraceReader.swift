import AccessoryCore

/// Reads a hotplug trace (<doc:TraceFormat>, version 1) one record at a time.
///
/// The file is read in chunks (1 MiB by default) and never held whole, so memory does not
/// grow with the trace: only the longest line must fit. Blank lines are skipped, unknown
/// fields ignored, and an optional header on the first line is checked (`version` must be 1).
/// Every record is validated; the first problem throws a ``TraceError`` naming the file and
/// line. The one exception is a last line without a newline that is not valid JSON (a writer
/// killed mid-line): it becomes a ``TraceWarning`` in ``warnings`` and the trace ends before it.
///
/// ```swift
/// var reader = try TraceReader(path: "hotplug.trace")
/// while let record = try reader.next() { … }
/// ```
///
/// A reader opened on a path owns the file and closes it when destroyed; it is `~Copyable`
/// so that exactly one value owns the descriptor.
public struct TraceReader: ~Copyable, Sendable {
    /// The name used in errors and warnings: the path, or what the caller chose.
    package let name: String
    /// The header, if the trace has one. Known as soon as the reader is created.
    public private(set) var header: TraceHeader?
    /// Problems tolerated so far (a truncated last line).
    public private(set) var warnings: [TraceWarning] = []

    private var lines: LineReader
    private var lineNumber = 0
    private var sawContent = false
    private var lastT = 0.0
    private var lastTLine = 0
    private var pending: TraceRecord?
    /// Repeated strings, decoded once.
    private var strings = StringTable()

    /// Opens the trace at `path`.
    /// - Throws: ``TraceError`` if the file cannot be opened or its first line is invalid.
    public init(path: String, chunkSize: Int = 1 << 20) throws(TraceError) {
        self.init(lines: LineReader(path: path, chunkSize: chunkSize))
        if let error = lines.openError { throw error }
        try readHeader()
    }

    /// Reads a trace from an open file descriptor (such as standard input).
    /// - Parameter closeWhenDone: whether the reader closes `fileDescriptor` when destroyed.
    package init(fileDescriptor: Int32, name: String, closeWhenDone: Bool = false, chunkSize: Int = 1 << 20)
        throws(TraceError)
    {
        self.init(lines: LineReader(fd: fileDescriptor, owns: closeWhenDone, name: name, chunkSize: chunkSize))
        try readHeader()
    }

    /// Reads a trace held in memory.
    package init(bytes: [UInt8], name: String = "<memory>") throws(TraceError) {
        self.init(lines: LineReader(bytes: bytes, name: name))
        try readHeader()
    }

    /// Reads a trace held in a string.
    public init(string: String, name: String = "<memory>") throws(TraceError) {
        try self.init(bytes: Array(string.utf8), name: name)
    }

    private init(lines: consuming LineReader) {
        self.name = lines.name
        self.lines = lines
    }

    /// The next record, or `nil` at the end of the trace.
    /// - Throws: ``TraceError`` for an invalid line, a `t` that decreases, or a read error.
    public mutating func next() throws(TraceError) -> TraceRecord? {
        if let record = pending {
            pending = nil
            return record
        }
        return try readRecord()
    }

    /// Reads every remaining record into memory.
    package consuming func readAll() throws(TraceError) -> TraceContents {
        var records: [TraceRecord] = []
        while let record = try next() { records.append(record) }
        return TraceContents(header: header, records: records, warnings: warnings)
    }

    /// Reads the whole trace at `path` into memory.
    public static func readAll(path: String) throws(TraceError) -> TraceContents {
        try TraceReader(path: path).readAll()
    }

    /// Reads a whole trace held in memory.
    package static func readAll(bytes: [UInt8], name: String = "<memory>") throws(TraceError) -> TraceContents {
        try TraceReader(bytes: bytes, name: name).readAll()
    }

    /// Reads a whole trace held in a string.
    package static func readAll(string: String, name: String = "<memory>") throws(TraceError) -> TraceContents {
        try TraceReader(string: string, name: name).readAll()
    }

    // MARK: Lines

    /// Reads up to the first record, taking the header if there is one.
    private mutating func readHeader() throws(TraceError) {
        pending = try readRecord()
    }

    private func failure(_ reason: String) -> TraceError {
        TraceError(file: name, line: lineNumber, reason: reason)
    }

    private mutating func readRecord() throws(TraceError) -> TraceRecord? {
        while true {
            guard let (first, lineEnd, terminated) = try lines.nextLine() else { return nil }
            var lineStart = first
            lineNumber += 1
            if lineNumber == 1, lineEnd - lineStart >= 3, lines.buffer[lineStart] == 0xEF,
                lines.buffer[lineStart + 1] == 0xBB, lines.buffer[lineStart + 2] == 0xBF
            {
                lineStart += 3  // a UTF-8 byte order mark
            }
            let line: TraceLine
            do {
                line = try lines.buffer.withUnsafeBytes { raw in
                    try TraceLineDecoder.decode(UnsafeRawBufferPointer(rebasing: raw[lineStart..<lineEnd]), strings: &strings)
                }
            } catch let error as JSONLineError {
                if !terminated {
                    warnings.append(TraceWarning(
                        file: name, line: lineNumber, reason: "truncated last line (writer killed mid-line?)"))
                    return nil
                }
                throw failure("invalid JSON: \(error)")
            } catch let error as TraceFormatViolation {
                throw failure(error.reason)
            } catch {
                throw failure("\(error)")
            }
            switch consume line {  // moves the event out, no copy
            case .blank:
                continue
            case .header(let h):
                guard !sawContent else { throw failure("a header is allowed only on the first line") }
                header = h
                sawContent = true
            case .event(let t, let event):
                guard t >= lastT else {
                    throw failure("'t' went backwards: \(t) after \(lastT) on line \(lastTLine)")
                }
                sawContent = true
                lastT = t
                lastTLine = lineNumber
                return TraceRecord(t: t, event: event, line: lineNumber)
            }
        }
    }
}
