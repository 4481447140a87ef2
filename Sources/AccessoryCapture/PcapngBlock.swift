/// Builds pcapng blocks: a section header, an interface description, an enhanced packet. What
/// ``USBCaptureWriter`` writes, and what tests use to make files of any shape.
package enum PcapngBlock {
    /// A section header block (version 1.0, section length unknown), with `shb_userappl` when
    /// `application` is given.
    package static func sectionHeader(bigEndian: Bool = false, application: String? = nil) -> [UInt8] {
        block(type: 0x0A0D_0D0A, bigEndian: bigEndian) { w in
            w.u32(0x1A2B_3C4D)
            w.u16(1)
            w.u16(0)
            w.u64(UInt64.max)  // -1: not given
            var options: [(UInt16, [UInt8])] = []
            if let application { options.append((4, Array(application.utf8))) }
            appendOptions(options, to: &w)
        }
    }

    /// An interface description block: `linkType`, `snapLength` (0: no limit), and the
    /// `if_name` and `if_tsresol` options when given.
    package static func interfaceDescription(
        linkType: UInt16, snapLength: UInt32 = 0, name: String? = nil, timestampResolution: UInt8? = nil,
        bigEndian: Bool = false
    ) -> [UInt8] {
        block(type: 1, bigEndian: bigEndian) { w in
            w.u16(linkType)
            w.u16(0)
            w.u32(snapLength)
            var options: [(UInt16, [UInt8])] = []
            if let name { options.append((2, Array(name.utf8))) }
            if let timestampResolution { options.append((9, [timestampResolution])) }
            appendOptions(options, to: &w)
        }
    }

    /// An enhanced packet block of interface `interface` at `ticks` of its clock, holding
    /// `packet` (its original length `originalLength`, by default all of it).
    package static func enhancedPacket(
        interface: UInt32 = 0, ticks: UInt64, packet: [UInt8], originalLength: Int? = nil, bigEndian: Bool = false
    ) -> [UInt8] {
        block(type: 6, bigEndian: bigEndian) { w in
            appendPacketFields(interface: interface, ticks: ticks, captured: packet.count, original: originalLength ?? packet.count, to: &w)
            w.raw(packet)
        }
    }

    /// An enhanced packet block of interface 0, little-endian, in three pieces for one
    /// `writev(2)`: the packet is the `packetHeaderLength` bytes `packetHeader` appends, then
    /// `dataLength` bytes the caller writes from where they lie, between the two pieces
    /// returned (the block's type, length and packet fields with the packet header; then the
    /// padding and the trailing length).
    package static func enhancedPacketFrame(
        ticks: UInt64, packetHeaderLength: Int, dataLength: Int, packetHeader: (inout ByteWriter) -> Void
    ) -> (head: [UInt8], trailer: [UInt8]) {
        let packetLength = packetHeaderLength + dataLength
        let padding = (4 - packetLength % 4) % 4
        let length = UInt32(28 + packetLength + padding + 4)
        var head = ByteWriter(bigEndian: false, capacity: 28 + packetHeaderLength)
        head.u32(6)
        head.u32(length)
        appendPacketFields(interface: 0, ticks: ticks, captured: packetLength, original: packetLength, to: &head)
        packetHeader(&head)
        var trailer = ByteWriter(bigEndian: false, capacity: 8)
        trailer.raw(repeatElement(0, count: padding))
        trailer.u32(length)
        return (head.bytes, trailer.bytes)
    }

    /// Appends an enhanced packet block's fields before its data: interface, timestamp, lengths.
    package static func appendPacketFields(interface: UInt32, ticks: UInt64, captured: Int, original: Int, to w: inout ByteWriter) {
        w.u32(interface)
        w.u32(UInt32(truncatingIfNeeded: ticks >> 32))
        w.u32(UInt32(truncatingIfNeeded: ticks))
        w.u32(UInt32(truncatingIfNeeded: captured))
        w.u32(UInt32(truncatingIfNeeded: original))
    }

    /// A block of `type`: its length before and after a body that `body` appends (padded to 4).
    package static func block(type: UInt32, bigEndian: Bool, capacity: Int = 64, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
        var w = ByteWriter(bigEndian: bigEndian, capacity: capacity)
        w.u32(type)
        w.u32(0)
        body(&w)
        w.pad4()
        let length = UInt32(w.bytes.count + 4)
        w.u32(length)
        w.set32(length, at: 4)
        return w.bytes
    }

    /// Options, each padded to 4 bytes, then `opt_endofopt` (none at all when there are none).
    private static func appendOptions(_ options: [(code: UInt16, value: [UInt8])], to w: inout ByteWriter) {
        guard !options.isEmpty else { return }
        for (code, value) in options {
            w.u16(code)
            w.u16(UInt16(value.count))
            w.raw(value)
            w.pad4()
        }
        w.u32(0)
    }
}
