/// Reads the usbmon events of a pcap or pcapng file, one at a time, in bounded memory: packets
/// of link types 220 and 189, with the others skipped. ``USBCapture`` and
/// ``USBCaptureSummary`` are both built on it.
package struct USBMonReader: ~Copyable {
    private var packets: CapturePacketReader

    /// Opens `path`.
    package init(path: String, chunkSize: Int = CapturePacketReader.chunkSize, limits: USBCaptureLimits = .standard) throws(USBCaptureError) {
        packets = try CapturePacketReader(path: path, chunkSize: chunkSize, limits: limits)
    }

    /// Reads bytes held in memory, named `name` in errors, `chunkSize` bytes at a time (by
    /// default all at once), within `limits`.
    package init(bytes: [UInt8], name: String, chunkSize: Int? = nil, limits: USBCaptureLimits = .standard) {
        packets = CapturePacketReader(bytes: bytes, name: name, chunkSize: chunkSize, limits: limits)
    }

    /// The path, or the name given with the bytes.
    package var name: String { packets.name }

    /// The block or record cut short at the end of the file, if one was (it was dropped).
    package var truncation: USBCaptureError? { packets.truncation }

    /// What the reader and the values built on it keep at most.
    package var limits: USBCaptureLimits { packets.limits }

    /// Interfaces past `limits.interfaces` in their section, and the packets on them:
    /// skipped.
    package var droppedInterfaces: (interfaces: Int, packets: Int) { (packets.droppedInterfaces, packets.droppedPackets) }

    /// The next usbmon event, or `nil` at the end of the file.
    package mutating func next() throws(USBCaptureError) -> USBMonRecord? {
        while let packet = try packets.next() {
            guard let headerLength = USBMonHeader.length(ofLinkType: packet.linkType) else { continue }
            guard packet.count >= headerLength else {
                throw USBCaptureError(
                    file: name, offset: packet.offset,
                    reason: "the usbmon packet has \(packet.count) bytes, fewer than its \(headerLength)-byte header")
            }
            let raw = packets.bytes(start: packet.start, count: packet.count)
            let header: USBMonHeader
            do {
                header = try USBMonHeader(raw, headerLength: headerLength, bigEndian: packet.bigEndian)
            } catch {
                throw USBCaptureError(file: name, offset: packet.offset, reason: error.reason)
            }
            // What follows the header: isochronous descriptors (counted in capturedLength),
            // then data, possibly cut short by the capture's snap length.
            let following = packet.count - headerLength
            let descriptors = header.kind == .isochronous ? min(Int(header.descriptorCount) * 16, following) : 0
            let dataCount = max(0, min(Int(header.capturedLength) - descriptors, following - descriptors))
            let timestamp = packet.timestamp ?? header.seconds &* 1_000_000_000 &+ Int64(header.microseconds) &* 1000
            return USBMonRecord(
                header: header, timestamp: timestamp, offset: packet.offset,
                dataStart: packet.start + headerLength + descriptors, dataCount: dataCount)
        }
        return nil
    }

    /// The record's data bytes, valid until the next call of ``next()``.
    package func bytes(of record: USBMonRecord) -> UnsafeRawBufferPointer {
        packets.bytes(start: record.dataStart, count: record.dataCount)
    }

    /// A copy of the record's data.
    package func data(of record: USBMonRecord) -> [UInt8] {
        [UInt8](bytes(of: record))
    }
}
