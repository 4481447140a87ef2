#if canImport(Glibc)
import Glibc
#endif

/// Writes a usbmon capture as pcapng, link type 220 (`LINKTYPE_USB_LINUX_MMAPPED`): one
/// section, one interface, then one `S` record per submission and one `C` (or `E`) record per
/// completion, each with the 64-byte header usbmon gives it. Wireshark, `tshark` and
/// ``USBCapture`` read it.
///
/// Each record is one `write(2)` to a file opened with `O_APPEND`, made at once: a process
/// killed between records leaves a file that reads to its last record, and threads may record
/// concurrently (records of one URB in the order their calls return). Timestamps come from the
/// clock given at creation.
package final class USBCaptureWriter: Sendable {
    /// The file's path.
    package let path: String
    private let fd: Int32
    private let now: @Sendable () -> Duration

    /// The most data one record carries: more is counted in its length but not captured.
    package static let maximumCapturedData = CapturePacketReader.maximumBlockLength - 1024

    /// Creates (or empties) the file at `path` and writes the section and interface headers.
    ///
    /// - Parameter now: the time of each record, since the Unix epoch (by default the system's
    ///   real-time clock).
    /// - Throws: ``USBCaptureError`` when the file cannot be created or written.
    package init(path: String, now: @escaping @Sendable () -> Duration = USBCaptureWriter.realtime) throws(USBCaptureError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw USBCaptureError(file: path, offset: nil, reason: "cannot create: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.fd = fd
        self.now = now
        try write(
            PcapngBlock.sectionHeader(application: "AccessoryKit")
                + PcapngBlock.interfaceDescription(
                    linkType: 220, snapLength: UInt32(CapturePacketReader.maximumBlockLength), name: "usbmon0",
                    timestampResolution: 9))
    }

    deinit { close(fd) }

    /// Records a submission (`S`).
    ///
    /// - Parameters:
    ///   - endpoint: with the direction bit (0x80 = IN); for control, the setup's direction.
    ///   - setup: the setup packet of a control transfer.
    ///   - data: OUT only: the bytes the host sends.
    ///   - requestedLength: the URB's buffer length.
    package func submit(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind,
        setup: USBCapture.Setup? = nil, data: ArraySlice<UInt8> = [], requestedLength: Int
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
        try write(header, data: isIn ? [] : data)
    }

    /// Records a completion (`C`).
    ///
    /// - Parameters:
    ///   - status: 0, or a negative errno (`-EPIPE` for a stall, `-ENOENT` when cancelled, …).
    ///   - data: IN only: the bytes the device returned (an OUT completion carries no data).
    ///   - actualLength: the bytes transferred; by default `data.count`.
    package func complete(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, status: Int32,
        data: ArraySlice<UInt8> = [], actualLength: Int? = nil
    ) throws(USBCaptureError) {
        let isIn = endpoint & 0x80 != 0
        var header = header(urbID, .complete, bus, device, endpoint, kind)
        header.status = status
        header.length = UInt32(clamping: actualLength ?? data.count)
        header.dataFlag = isIn ? USBMonHeader.present : 0x3e  // '>': OUT data went at submission
        try write(header, data: isIn ? data : [])
    }

    /// Records a submission that failed (`E`) with `status`, a negative errno.
    package func fail(
        urbID: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, status: Int32
    ) throws(USBCaptureError) {
        var header = header(urbID, .error, bus, device, endpoint, kind)
        header.status = status
        header.dataFlag = USBMonHeader.Event.error.rawValue
        try write(header, data: [])
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
    /// block, with one `writev(2)`: the block's fields and the usbmon header, the data where it
    /// lies (not copied), then the padding and the trailing length.
    private func write(_ header: USBMonHeader, data: ArraySlice<UInt8>) throws(USBCaptureError) {
        var header = header
        let (seconds, attoseconds) = now().components
        let nanoseconds = seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        header.seconds = seconds
        header.microseconds = Int32(truncatingIfNeeded: attoseconds / 1_000_000_000_000)
        let captured = data.prefix(Self.maximumCapturedData)
        header.capturedLength = UInt32(captured.count)
        let frame = PcapngBlock.enhancedPacketFrame(
            ticks: UInt64(bitPattern: nanoseconds), packetHeaderLength: 64, dataLength: captured.count) { header.append(to: &$0) }
        let written: Int = frame.head.withUnsafeBytes { head in
            captured.withUnsafeBytes { body in
                frame.trailer.withUnsafeBytes { tail in
                    var parts = [
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count),
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count),
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: tail.baseAddress), iov_len: tail.count),
                    ]
                    while true {
                        let n = writev(fd, &parts, Int32(parts.count))
                        if n < 0 && errno == EINTR { continue }
                        return n
                    }
                }
            }
        }
        let total = frame.head.count + captured.count + frame.trailer.count
        if written == total { return }
        guard written >= 0 else {
            throw USBCaptureError(file: path, offset: nil, reason: "write failed: \(String(cString: strerror(errno)))")
        }
        // A short write (rare on a file): the rest, from where it stopped.
        try write(Array((frame.head + captured + frame.trailer).dropFirst(written)))
    }

    /// Writes all of `bytes` with `write(2)`, retrying after signals.
    private func write(_ bytes: [UInt8]) throws(USBCaptureError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw USBCaptureError(file: path, offset: nil, reason: "write failed: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }
}
