#if canImport(Glibc)
import Glibc
#endif

/// One packet of a capture file, as ``CapturePacketReader/next()`` returns it: its bytes lie in
/// the reader's buffer until the next call.
package struct CapturePacket: Sendable {
    /// The link type of the packet's interface (220 for usbmon with the 64-byte header, …).
    package var linkType: UInt16
    /// The time, in nanoseconds since the Unix epoch; `nil` for a simple packet block, which has none.
    package var timestamp: Int64?
    /// Whether the file or section is big-endian; the usbmon header is in the same order.
    package var bigEndian: Bool
    /// Where the packet's block or record starts in the file.
    package var offset: Int
    /// The captured bytes are `start ..< start + count` of the reader's buffer.
    package var start: Int
    package var count: Int
}

/// Reads the packets of a pcap or pcapng file in order, in chunks of bounded size, never the
/// whole file: its memory is one chunk, or the largest block when that is larger.
///
/// pcapng: any number of sections, in either byte order, each with its interfaces (link type,
/// `if_tsresol`, `if_tsoffset`); enhanced, simple and obsolete packet blocks; other blocks
/// skipped. pcap: either byte order, microsecond or nanosecond magic. A malformed file throws
/// ``USBCaptureError`` with the offset of the block or record at fault. A block or record cut
/// short by the end of the file ends the reading quietly and is kept in ``truncation``, except
/// at the file's header, where nothing would be left.
package struct CapturePacketReader: ~Copyable {
    /// How much is read at a time.
    package static let chunkSize = 1 << 20
    /// The longest block or record accepted: longer is an error, not an allocation.
    package static let maximumBlockLength = 1 << 25

    /// The path, or the name given with the bytes, used in errors.
    package let name: String
    private var storage: UnsafeMutableRawBufferPointer
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// The bytes read in place of a file, and how many of them have been read.
    private var memory: [UInt8]?
    private var memoryRead = 0
    /// The unread bytes are `storage[start ..< end]`; `storage[0]` is at `base` in the file.
    private var start = 0
    private var end = 0
    private var base = 0
    private var atEOF: Bool
    private var format = Format.unknown
    /// The current section's interfaces, at most `limits.interfaces` of them.
    private var interfaces: [Interface] = []
    /// How many interfaces the current section has described, kept or not.
    private var sectionInterfaces = 0
    /// The block or record cut short at the end of the file, if one was.
    package private(set) var truncation: USBCaptureError?
    /// What the reader keeps at most.
    package let limits: USBCaptureLimits
    /// Interfaces past `limits.interfaces` in their section: not kept.
    package private(set) var droppedInterfaces = 0
    /// Packets on those interfaces: skipped.
    package private(set) var droppedPackets = 0

    private enum Format {
        case unknown
        case pcap(bigEndian: Bool, nanosecondsPerTick: Int64, linkType: UInt16)
        case pcapng(bigEndian: Bool)
    }

    /// An interface of the current pcapng section.
    private struct Interface {
        var linkType: UInt16
        var snapLength: UInt32
        var clock: TickClock
    }

    /// Opens `path` for reading.
    package init(path: String, chunkSize: Int = CapturePacketReader.chunkSize, limits: USBCaptureLimits = .standard) throws(USBCaptureError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw USBCaptureError(file: path, offset: nil, reason: "cannot open: \(String(cString: strerror(errno)))")
        }
        self.name = path
        self.limits = limits
        self.fd = fd
        self.ownsDescriptor = true
        self.storage = .allocate(byteCount: max(chunkSize, 16), alignment: 8)
        self.atEOF = false
    }

    /// Reads bytes held in memory through the same buffer as a file, `chunkSize` bytes at a
    /// time (by default all at once).
    package init(bytes: [UInt8], name: String, chunkSize: Int? = nil, limits: USBCaptureLimits = .standard) {
        self.name = name
        self.limits = limits
        self.fd = -1
        self.ownsDescriptor = false
        self.memory = bytes
        self.storage = .allocate(byteCount: max(chunkSize ?? bytes.count, 16), alignment: 8)
        self.atEOF = false
    }

    deinit {
        storage.deallocate()
        if ownsDescriptor { close(fd) }
    }

    /// `count` bytes of the buffer from `start`: a packet's, valid until the next call of ``next()``.
    package func bytes(start: Int, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: view[start..<start + count])
    }

    /// The next packet, or `nil` at the end of the file (or at a packet cut short by it).
    package mutating func next() throws(USBCaptureError) -> CapturePacket? {
        switch format {
        case .unknown:
            try readFileHeader()
            return try next()
        case .pcap(let bigEndian, let perTick, let linkType):
            return try nextRecord(bigEndian: bigEndian, nanosecondsPerTick: perTick, linkType: linkType)
        case .pcapng:
            return try nextBlock()
        }
    }

    // MARK: - pcap

    private static let pcapMagics: [UInt32: (bigEndian: Bool, nanosecondsPerTick: Int64)] = [
        0xa1b2_c3d4: (false, 1000), 0xa1b2_3c4d: (false, 1), 0xd4c3_b2a1: (true, 1000), 0x4d3c_b2a1: (true, 1),
    ]
    private static let sectionHeaderType: UInt32 = 0x0A0D_0D0A

    private mutating func readFileHeader() throws(USBCaptureError) {
        guard try ensure(4) else {
            throw error(at: 0, end == start ? "the file is empty" : "the file header is cut short: \(end - start) bytes")
        }
        let magic = view.u32(start, bigEndian: false)
        if magic == Self.sectionHeaderType {
            format = .pcapng(bigEndian: false)
            return
        }
        guard let (bigEndian, perTick) = Self.pcapMagics[magic] else {
            throw error(at: 0, "not a pcap or pcapng file: it starts with \(hex(magic, 8))")
        }
        guard try ensure(24) else {
            throw error(at: 0, "the pcap file header is cut short: \(end - start) of 24 bytes")
        }
        let major = view.u16(start + 4, bigEndian: bigEndian)
        guard major == 2 else {
            throw error(at: 0, "pcap version \(major).\(view.u16(start + 6, bigEndian: bigEndian)) is not supported (only 2.x)")
        }
        let linkType = UInt16(truncatingIfNeeded: view.u32(start + 20, bigEndian: bigEndian))
        format = .pcap(bigEndian: bigEndian, nanosecondsPerTick: perTick, linkType: linkType)
        start += 24
    }

    private mutating func nextRecord(bigEndian: Bool, nanosecondsPerTick: Int64, linkType: UInt16) throws(USBCaptureError) -> CapturePacket? {
        let offset = base + start
        guard try ensure(16) else {
            if end > start { truncation = error(at: offset, "the last record's header is cut short: \(end - start) of 16 bytes") }
            return nil
        }
        let seconds = Int64(view.u32(start, bigEndian: bigEndian))
        let fraction = Int64(view.u32(start + 4, bigEndian: bigEndian))
        let captured = Int(view.u32(start + 8, bigEndian: bigEndian))
        guard captured <= Self.maximumBlockLength else {
            throw error(at: offset, "the record's captured length \(captured) is over the limit of \(Self.maximumBlockLength) bytes")
        }
        guard try ensure(16 + captured) else {
            truncation = error(at: offset, "the last record is cut short: \(end - start - 16) of \(captured) bytes")
            return nil
        }
        let packet = CapturePacket(
            linkType: linkType, timestamp: seconds &* 1_000_000_000 &+ fraction &* nanosecondsPerTick,
            bigEndian: bigEndian, offset: offset, start: start + 16, count: captured)
        start += 16 + captured
        return packet
    }

    // MARK: - pcapng

    private mutating func nextBlock() throws(USBCaptureError) -> CapturePacket? {
        while true {
            let offset = base + start
            let first = offset == 0
            guard try ensure(8) else {
                // The file's first block is its section header: without it there is no capture.
                if first { throw error(at: offset, "the section header block is cut short: \(end - start) of at least 28 bytes") }
                if end > start { truncation = error(at: offset, "the last block's header is cut short: \(end - start) bytes") }
                return nil
            }
            guard case .pcapng(var bigEndian) = format else { return nil }
            let isSection = view.u32(start, bigEndian: false) == Self.sectionHeaderType
            if isSection {
                guard try ensure(12) else {
                    let cut = error(at: offset, "the section header block is cut short: \(end - start) bytes")
                    if first { throw cut }
                    truncation = cut
                    return nil
                }
                switch view.u32(start + 8, bigEndian: false) {
                case 0x1A2B_3C4D: bigEndian = false
                case 0x4D3C_2B1A: bigEndian = true
                case let other: throw error(at: offset, "the section header's byte-order magic is \(hex(other, 8)), not 0x1a2b3c4d")
                }
            }
            let type = view.u32(start, bigEndian: bigEndian)
            let length = Int(view.u32(start + 4, bigEndian: bigEndian))
            let minimum = isSection ? 28 : 12
            guard length >= minimum else {
                throw error(at: offset, "block length \(length) is less than the \(minimum) bytes a\(isSection ? " section header" : "ny") block needs")
            }
            guard length % 4 == 0 else { throw error(at: offset, "block length \(length) is not a multiple of 4") }
            guard length <= Self.maximumBlockLength else {
                throw error(at: offset, "block length \(length) is over the limit of \(Self.maximumBlockLength) bytes")
            }
            guard try ensure(length) else {
                let what = isSection ? "the section header block" : "the last block"
                let cut = error(at: offset, "\(what) is cut short: \(end - start) of \(length) bytes")
                if first { throw cut }
                truncation = cut
                return nil
            }
            let trailer = Int(view.u32(start + length - 4, bigEndian: bigEndian))
            guard trailer == length else {
                throw error(at: offset, "block length mismatch: \(length) at the start, \(trailer) at the end")
            }
            let body = start + 8
            let bodyLength = length - 12
            start += length
            switch type {
            case Self.sectionHeaderType:
                let major = view.u16(body + 4, bigEndian: bigEndian)
                guard major == 1 else { throw error(at: offset, "pcapng version \(major) is not supported (only 1.x)") }
                format = .pcapng(bigEndian: bigEndian)
                interfaces.removeAll()
                sectionInterfaces = 0
            case 1:
                let interface = try interface(body: body, length: bodyLength, offset: offset, bigEndian: bigEndian)
                sectionInterfaces += 1
                if interfaces.count < limits.interfaces {
                    interfaces.append(interface)
                } else {
                    droppedInterfaces += 1
                }
            case 6, 2:
                // Enhanced packet block; the obsolete packet block has the same layout with a
                // 16-bit interface ID and a drop count.
                guard bodyLength >= 20 else { throw error(at: offset, "packet block of \(length) bytes is too short for its fields") }
                let id = Int(type == 6 ? view.u32(body, bigEndian: bigEndian) : UInt32(view.u16(body, bigEndian: bigEndian)))
                let ticks = UInt64(view.u32(body + 4, bigEndian: bigEndian)) << 32 | UInt64(view.u32(body + 8, bigEndian: bigEndian))
                let captured = Int(view.u32(body + 12, bigEndian: bigEndian))
                guard captured <= bodyLength - 20 else {
                    throw error(at: offset, "captured length \(captured) runs past the end of its \(length)-byte block")
                }
                guard let interface = try self.interface(id, offset: offset) else { continue }
                return CapturePacket(
                    linkType: interface.linkType, timestamp: interface.clock.nanoseconds(ticks), bigEndian: bigEndian,
                    offset: offset, start: body + 20, count: captured)
            case 3:
                guard bodyLength >= 4 else { throw error(at: offset, "simple packet block of \(length) bytes is too short for its fields") }
                guard let interface = try self.interface(0, offset: offset) else { continue }
                var captured = min(Int(view.u32(body, bigEndian: bigEndian)), bodyLength - 4)
                if interface.snapLength > 0 { captured = min(captured, Int(interface.snapLength)) }
                return CapturePacket(
                    linkType: interface.linkType, timestamp: nil, bigEndian: bigEndian, offset: offset, start: body + 4,
                    count: captured)
            default:
                continue  // statistics, name resolution, custom and other blocks
            }
        }
    }

    /// Reads an interface description block's link type, snap length and clock options.
    private func interface(body: Int, length: Int, offset: Int, bigEndian: Bool) throws(USBCaptureError) -> Interface {
        guard length >= 8 else { throw error(at: offset, "interface description block too short for its fields") }
        var result = Interface(
            linkType: view.u16(body, bigEndian: bigEndian), snapLength: view.u32(body + 4, bigEndian: bigEndian),
            clock: TickClock(resolution: 6, offsetSeconds: 0)!)
        var resolution: UInt8 = 6
        var offsetSeconds: Int64 = 0
        var p = body + 8
        let stop = body + length
        while p + 4 <= stop {
            let code = view.u16(p, bigEndian: bigEndian)
            let size = Int(view.u16(p + 2, bigEndian: bigEndian))
            if code == 0 { break }
            guard p + 4 + size <= stop else {
                throw error(at: offset, "interface option \(code) of \(size) bytes runs past the end of its block")
            }
            if code == 9 && size >= 1 { resolution = view[p + 4] }
            if code == 14 && size >= 8 { offsetSeconds = Int64(bitPattern: view.u64(p + 4, bigEndian: bigEndian)) }
            p += 4 + (size + 3) & ~3
        }
        guard let clock = TickClock(resolution: resolution, offsetSeconds: offsetSeconds) else {
            throw error(at: offset, "if_tsresol \(hex(UInt32(resolution), 2)) is out of range")
        }
        result.clock = clock
        return result
    }

    /// Interface `id` of the current section, or `nil` (the packet counted as skipped) when
    /// it is one past the limit.
    private mutating func interface(_ id: Int, offset: Int) throws(USBCaptureError) -> Interface? {
        if id >= interfaces.count && id < sectionInterfaces {
            droppedPackets += 1
            return nil
        }
        guard id < interfaces.count else {
            throw error(at: offset, "the packet names interface \(id), but its section has \(interfaces.count) interface\(interfaces.count == 1 ? "" : "s")")
        }
        return interfaces[id]
    }

    // MARK: - Buffer

    private var view: UnsafeRawBufferPointer { UnsafeRawBufferPointer(storage) }

    /// Makes at least `count` unread bytes available from `start`, moving the unread bytes to
    /// the front and growing the buffer when needed; false when the file ends first.
    private mutating func ensure(_ count: Int) throws(USBCaptureError) -> Bool {
        while end - start < count {
            if atEOF { return false }
            if storage.count - start < count || end == storage.count {
                let unread = end - start
                if start > 0 {
                    if unread > 0 { storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: unread) }
                    base += start
                    start = 0
                    end = unread
                }
                if storage.count < count {
                    let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, storage.count * 2), alignment: 8)
                    if unread > 0 { grown.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: unread) }
                    storage.deallocate()
                    storage = grown
                }
            }
            let n = memory == nil ? read(fd, storage.baseAddress! + end, storage.count - end) : readMemory()
            if n > 0 {
                end += n
            } else if n == 0 {
                atEOF = true
            } else if errno != EINTR {
                throw USBCaptureError(file: name, offset: base + end, reason: "read failed: \(String(cString: strerror(errno)))")
            }
        }
        return true
    }

    /// Copies the next bytes of ``memory`` into the buffer, as `read(2)` would.
    private mutating func readMemory() -> Int {
        guard let memory else { return 0 }
        let n = min(storage.count - end, memory.count - memoryRead)
        guard n > 0 else { return 0 }
        memory.withUnsafeBytes { storage.baseAddress!.advanced(by: end).copyMemory(from: $0.baseAddress! + memoryRead, byteCount: n) }
        memoryRead += n
        return n
    }

    private func error(at offset: Int, _ reason: String) -> USBCaptureError {
        USBCaptureError(file: name, offset: offset, reason: reason)
    }
}

/// `0x` and `digits` lowercase hexadecimal digits.
func hex(_ value: UInt32, _ digits: Int) -> String {
    let s = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, digits - s.count)) + s
}
