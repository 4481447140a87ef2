#if canImport(Glibc)
import Glibc
#endif
import AccessoryLocking

/// Writes a usbmon capture as pcapng, link type 220 (`LINKTYPE_USB_LINUX_MMAPPED`): one
/// section, one interface, then one `S` record per submission and one `C` (or `E`) record per
/// completion, each with the 64-byte header usbmon gives it. Wireshark, `tshark` and
/// ``USBCapture`` read it.
///
/// Each record is written with one `writev(2)` as it is made (or, for a record made with
/// `deferred`, at the next ``flush()`` or record), one flush at a time: a process killed between
/// records leaves a file that reads to its last record, and threads may record concurrently.
/// The first write that fails or falls short (a full disk) cuts the file back to its last
/// whole record and ends the writing: that error is kept in ``failure`` and thrown by every
/// later record, and nothing more is written, so the file stays readable to its end.
/// Timestamps come from the clock given at creation.
package final class USBCaptureWriter: Sendable {
    /// The file's path.
    package let path: String
    private let now: @Sendable () -> Duration
    private let writeVector: WriteVector
    private let output: Locked<Output>
    /// Held for the whole of one flush of the held records (see `write(_:deferred:)`), with
    /// where the last whole record ends: the file's size, unless a flush is under way.
    ///
    /// (Not an empty value: ThreadSanitizer takes an access to a zero-sized stored property
    /// for one at the object's first word, which every call reads, and reports a race.)
    private let writing = Locked(0)

    /// `writev(2)`'s shape: the descriptor, the buffers and their count; the bytes written,
    /// or -1 with `errno` set.
    package typealias WriteVector = @Sendable (Int32, UnsafePointer<iovec>, Int32) -> Int

    /// The file as written so far.
    private struct Output {
        /// -1 once closed.
        var fd: Int32
        /// The first write that failed; from then on nothing is written.
        var failure: USBCaptureError?
        /// Deferred records, in order: head, data and trailer of each.
        var held: [ArraySlice<UInt8>] = []
        var heldBytes = 0
    }

    /// The most buffers one `writev(2)` takes (Linux's `IOV_MAX`).
    private static let vectorLimit = 1024

    /// The most data one record carries: more is counted in its length but not captured.
    package static let maximumCapturedData = CapturePacketReader.maximumBlockLength - 1024

    /// Creates (or empties) the file at `path` and writes the section and interface headers.
    ///
    /// - Parameters:
    ///   - now: the time of each record, since the Unix epoch (by default the system's
    ///     real-time clock).
    ///   - writeVector: how the records are written (by default `writev(2)`; tests give one
    ///     that fails as a full disk does).
    /// - Throws: ``USBCaptureError`` when the file cannot be created or written.
    package init(
        path: String, now: @escaping @Sendable () -> Duration = USBCaptureWriter.realtime,
        writeVector: @escaping WriteVector = { Glibc.writev($0, $1, $2) }
    ) throws(USBCaptureError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw USBCaptureError(file: path, offset: nil, reason: "cannot create: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.now = now
        self.writeVector = writeVector
        self.output = Locked(Output(fd: fd))
        let header =
            PcapngBlock.sectionHeader(application: "AccessoryKit")
            + PcapngBlock.interfaceDescription(
                linkType: 220, snapLength: UInt32(CapturePacketReader.maximumBlockLength), name: "usbmon0",
                timestampResolution: 9)
        try write([header[...]], deferred: false)
    }

    deinit {
        output.withLock { o in
            if o.fd >= 0 {
                _ = fsync(o.fd)
                Glibc.close(o.fd)
            }
        }
    }

    /// The first write that failed (the file was cut back to its last whole record and
    /// nothing was written after it), or the `fsync(2)` at ``close()`` that failed; `nil`
    /// while all is well.
    package var failure: USBCaptureError? { output.withLock { $0.failure } }

    /// Writes the deferred records, syncs the file to its disk (`fsync(2)`) and closes it.
    /// Records made afterwards are dropped. Closing twice does nothing.
    ///
    /// - Throws: ``USBCaptureError`` when a write failed (now or before) or the sync did.
    package func close() throws(USBCaptureError) {
        try flush()
        let failure: USBCaptureError? = writing.withLock { _ in
            output.withLock { o in
                guard o.fd >= 0 else { return o.failure }
                if fsync(o.fd) != 0, o.failure == nil {
                    o.failure = USBCaptureError(file: path, offset: nil, reason: "fsync failed: \(String(cString: strerror(errno)))")
                }
                Glibc.close(o.fd)
                o.fd = -1
                return o.failure
            }
        }
        if let failure { throw failure }
    }

    /// Writes the deferred records, with one `writev(2)`.
    ///
    /// - Throws: ``USBCaptureError`` when the write fails (the file is then cut back to its
    ///   last whole record), or failed before.
    package func flush() throws(USBCaptureError) {
        try write([], deferred: false)
    }

    /// Records a submission (`S`).
    ///
    /// - Parameters:
    ///   - endpoint: with the direction bit (0x80 = IN); for control, the setup's direction.
    ///   - setup: the setup packet of a control transfer.
    ///   - data: OUT only: the bytes the host sends.
    ///   - requestedLength: the URB's buffer length.
    ///   - deferred: whether the record waits for the next ``flush()`` (or the next record
    ///     not deferred), as a deferred completion does.
    package func submit(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind,
        setup: USBCapture.Setup? = nil, data: ArraySlice<UInt8> = [], requestedLength: Int, deferred: Bool = false
    ) throws(USBCaptureError) {
        let isIn = endpoint & 0x80 != 0
        var header = header(urbID, .submit, bus, device, endpoint, kind)
        header.status = USBMonHeader.inProgress
        header.length = UInt32(clamping: requestedLength)
        if let setup, kind == .control {
            header.setupFlag = USBMonHeader.present
            header.setupField = setup.field
        }
        header.dataFlag = isIn ? 0x3c : USBMonHeader.present  // '<': IN data comes at completion
        try write(header, data: isIn ? [] : data, deferred: deferred)
    }

    /// Records a completion (`C`).
    ///
    /// - Parameters:
    ///   - status: 0, or a negative errno (`-EPIPE` for a stall, `-ENOENT` when cancelled, …).
    ///   - data: IN only: the bytes the device returned (an OUT completion carries no data).
    ///   - actualLength: the bytes transferred; by default `data.count`.
    ///   - deferred: whether the record waits for the next ``flush()`` (or the next record
    ///     not deferred), to be written with it in one `writev(2)`.
    package func complete(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, status: Int32,
        data: ArraySlice<UInt8> = [], actualLength: Int? = nil, deferred: Bool = false
    ) throws(USBCaptureError) {
        let isIn = endpoint & 0x80 != 0
        var header = header(urbID, .complete, bus, device, endpoint, kind)
        header.status = status
        header.length = UInt32(clamping: actualLength ?? data.count)
        header.dataFlag = isIn ? USBMonHeader.present : 0x3e  // '>': OUT data went at submission
        try write(header, data: isIn ? data : [], deferred: deferred)
    }

    /// Records a submission that failed (`E`) with `status`, a negative errno.
    package func fail(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, status: Int32
    ) throws(USBCaptureError) {
        var header = header(urbID, .error, bus, device, endpoint, kind)
        header.status = status
        header.dataFlag = USBMonHeader.Event.error.rawValue
        try write(header, data: [], deferred: false)
    }

    /// The system's real-time clock, since the Unix epoch.
    package static let realtime: @Sendable () -> Duration = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
    }

    private func header(
        _ urbID: UInt64, _ event: USBMonHeader.Event, _ bus: Int, _ device: Int, _ endpoint: UInt8,
        _ kind: USBCapture.Transfer.Kind
    ) -> USBMonHeader {
        USBMonHeader(
            urbID: urbID, event: event, kind: kind, endpoint: endpoint, device: UInt8(truncatingIfNeeded: device),
            bus: UInt16(truncatingIfNeeded: bus), transferFlags: endpoint & 0x80 != 0 ? 0x200 : 0)  // URB_DIR_IN
    }

    /// Stamps `header` with the clock's time and writes it and `data` as one enhanced packet
    /// block: the block's fields and the usbmon header, the data where it lies (not copied),
    /// then the padding and the trailing length.
    private func write(_ header: USBMonHeader, data: ArraySlice<UInt8>, deferred: Bool) throws(USBCaptureError) {
        var header = header
        let (seconds, attoseconds) = now().components
        let nanoseconds = seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        header.seconds = seconds
        header.microseconds = Int32(truncatingIfNeeded: attoseconds / 1_000_000_000_000)
        let captured = data.prefix(Self.maximumCapturedData)
        header.capturedLength = UInt32(captured.count)
        let frame = PcapngBlock.enhancedPacketFrame(
            ticks: UInt64(bitPattern: nanoseconds), packetHeaderLength: 64, dataLength: captured.count) { header.append(to: &$0) }
        try write([frame.head[...], captured, frame.trailer[...]], deferred: deferred)
    }

    /// Writes the deferred records and then `parts` (one record, or none), or, `deferred`,
    /// holds `parts` for later.
    ///
    /// Two locks: `output` guards the queue of held records and the file's state, and is
    /// held only for moments; `writing` is held for the whole of one flush (taking the queue,
    /// the `writev(2)`, the accounting), so flushes run one at a time and in the order they
    /// took the queue, which is the file's order. A thread that only queues a record (a
    /// submission, deferred) never waits for another thread's `writev(2)`. The lock order is
    /// always `writing`, then `output`.
    private func write(_ parts: [ArraySlice<UInt8>], deferred: Bool) throws(USBCaptureError) {
        try output.withLock { (o: inout Output) throws(USBCaptureError) in
            if let failure = o.failure { throw failure }
            guard o.fd >= 0 else { return }  // closed: dropped
            o.held += parts
            o.heldBytes += parts.reduce(0) { $0 + $1.count }
        }
        if deferred { return }
        try writing.withLock { (size: inout Int) throws(USBCaptureError) in
            // The fd stays open while `writing` is held: `close()` takes it too.
            let (fd, parts, total): (Int32, [ArraySlice<UInt8>], Int) = try output.withLock {
                (o: inout Output) throws(USBCaptureError) in
                if let failure = o.failure { throw failure }
                defer {
                    o.held = []
                    o.heldBytes = 0
                }
                return (o.fd, o.held, o.heldBytes)
            }
            if parts.isEmpty || fd < 0 { return }
            if let reason = writeAll(fd, parts, total) {
                // Nothing more: a record written after a cut one would be lost to readers.
                let cut = ftruncate(fd, off_t(size)) == 0
                let failure = USBCaptureError(
                    file: path, offset: nil,
                    reason: "write failed: \(reason); "
                        + (cut ? "the capture ends at its last whole record (byte \(size))" : "the capture may end in a cut record")
                        + ", and nothing more is recorded")
                output.withLock { $0.failure = failure }
                throw failure
            }
            size += total
        }
    }

    /// Writes all of `parts` (`total` bytes) with `writev(2)`, going on after signals and
    /// short writes; the reason of the failure, or `nil`.
    private func writeAll(_ fd: Int32, _ parts: [ArraySlice<UInt8>], _ total: Int) -> String? {
        var vectors: [iovec] = []
        vectors.reserveCapacity(parts.count)
        // The parts stay alive (and in place) for as long as `parts` does, to the end of this call.
        for part in parts where !part.isEmpty {
            part.withUnsafeBytes { vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)) }
        }
        var first = 0
        var written = 0
        while first < vectors.count {
            let n = vectors.withUnsafeBufferPointer { v in
                writeVector(fd, v.baseAddress! + first, Int32(min(v.count - first, Self.vectorLimit)))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            if n == 0 { return "wrote nothing (\(written) of \(total) bytes written)" }
            written += n
            var left = n
            while first < vectors.count && left >= vectors[first].iov_len {
                left -= vectors[first].iov_len
                first += 1
            }
            if left > 0 {
                vectors[first].iov_base += left
                vectors[first].iov_len -= left
            }
        }
        return nil
    }
}
