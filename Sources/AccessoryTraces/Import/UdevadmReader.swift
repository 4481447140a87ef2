import AccessoryCore

/// Reads a `udevadm monitor` log as trace records, one at a time, in chunks: memory stays
/// flat however long the log is. ``UdevadmImporter`` describes what is read and how.
///
/// ```swift
/// var reader = try UdevadmReader(path: "usb.log")
/// while let record = try reader.next() { … }
/// for warning in reader.warnings { … }
/// ```
package struct UdevadmReader: ~Copyable, Sendable {
    /// The name used in errors and warnings: the path, or what the caller chose.
    package var name: String { lines.name }
    /// What was tolerated, such as lines that are not `udevadm monitor` output. Complete once
    /// ``next()`` has returned `nil`.
    package private(set) var warnings: [TraceWarning] = []
    /// How many non-blank lines were not recognized and skipped so far.
    package var skippedLines: Int { scanner.unrecognized }

    private var lines: LineReader
    private var scanner = UdevadmLineScanner()
    private var pairing = UdevadmPairing()
    private var lineNumber = 0
    private var ended = false
    /// Whether ``pairing`` changed since it last had nothing to hand on.
    private var pairingMayHaveMore = false
    private var origin: Int64?
    private var lastT = 0.0

    /// Opens the log at `path`.
    /// - Throws: ``TraceError`` if the file cannot be opened.
    package init(path: String, chunkSize: Int = 1 << 20) throws(TraceError) {
        lines = LineReader(path: path, chunkSize: chunkSize)
        if let error = lines.openError { throw error }
    }

    /// Reads a log from an open file descriptor (such as standard input).
    package init(fileDescriptor: Int32, name: String, closeWhenDone: Bool = false, chunkSize: Int = 1 << 20) {
        lines = LineReader(fd: fileDescriptor, owns: closeWhenDone, name: name, chunkSize: chunkSize)
    }

    /// Reads a log held in memory.
    package init(bytes: [UInt8], name: String = "<memory>") {
        lines = LineReader(bytes: bytes, name: name)
    }

    /// The next USB device `add` or `remove`, or `nil` at the end of the log.
    /// - Throws: ``TraceError`` on a read error, or at the end if the file is not a
    ///   `udevadm monitor` log (then no record was returned before).
    package mutating func next() throws(TraceError) -> TraceRecord? {
        while true {
            if pairingMayHaveMore {
                if let event = pairing.next() { return record(of: event) }
                pairingMayHaveMore = false
            }
            if ended { return nil }
            if let (start, end, _) = try lines.nextLine() {
                lineNumber += 1
                lines.buffer.withUnsafeBytes { raw in
                    scanner.take(UnsafeRawBufferPointer(rebasing: raw[start..<end]), number: lineNumber)
                }
            } else {
                scanner.closeBlock()
                ended = true
                try finish()
            }
            if !scanner.completed.isEmpty {
                for event in scanner.completed { pairing.add(event) }
                scanner.completed.removeAll(keepingCapacity: true)
                pairingMayHaveMore = true
            }
            if ended {
                pairing.finish()
                pairingMayHaveMore = true
            }
        }
    }

    /// `t` is the monitor timestamp minus that of the first record; where the log goes
    /// backwards, `t` stays at the previous value.
    private mutating func record(of event: UdevadmEvent) -> TraceRecord {
        let origin = self.origin ?? event.micros
        self.origin = origin
        let t = max(lastT, Double(event.micros - origin) / 1_000_000)
        lastT = t
        return TraceRecord(t: t, event: event.hotplugEvent, line: event.line)
    }

    /// Refuses a file that is not a log, and notes the lines that were skipped.
    private mutating func finish() throws(TraceError) {
        guard scanner.sawEvent || scanner.sawBanner else {
            throw TraceError(file: name, line: nil, reason: notALogReason)
        }
        if let (line, text) = scanner.firstUnrecognized {
            let s = scanner.unrecognized == 1 ? "" : "s"
            warnings.append(TraceWarning(
                file: name, line: line,
                reason: "skipped \(scanner.unrecognized) line\(s) that are not udevadm monitor output (first: \"\(text)\")"))
        }
    }

    private var notALogReason: String {
        var reason = "not a udevadm monitor log: no KERNEL[…] or UDEV […] event lines and no monitor banner"
        if lines.bytesRead == 0 {
            reason += " (the file is empty)"
        } else if scanner.looksBinary {
            reason += " (it looks like binary data)"
        } else if scanner.looksLikeDmesg > 0 && scanner.looksLikeDmesg * 2 >= scanner.unrecognized {
            reason += " (it looks like dmesg output)"
        } else if scanner.looksLikeLsusb > 0 {
            reason += " (it looks like lsusb output)"
        } else if scanner.looksLikeInfo > 0 {
            reason += " (it looks like udevadm info output)"
        }
        return reason + "; record one with `udevadm monitor --kernel --udev --property --subsystem-match=usb`"
    }
}
