// Fixed-width integers at byte offsets, in the byte order a pcap file or pcapng section
// declares: the loads that every reader here shares. Callers check the bounds first.
extension UnsafeRawBufferPointer {
    func u16(_ offset: Int, bigEndian: Bool) -> UInt16 {
        let v = loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
    }

    func u32(_ offset: Int, bigEndian: Bool) -> UInt32 {
        let v = loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
    }

    func u64(_ offset: Int, bigEndian: Bool) -> UInt64 {
        let v = loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        return bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
    }
}
