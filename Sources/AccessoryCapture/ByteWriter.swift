/// Appends fixed-width integers in a chosen byte order: how capture blocks and usbmon headers
/// are built, by the writer and by tests that make hostile files.
package struct ByteWriter: Sendable {
    /// The bytes so far.
    package private(set) var bytes: [UInt8] = []
    /// Whether integers are written most significant byte first.
    package let bigEndian: Bool

    /// An empty buffer that writes integers in this order.
    package init(bigEndian: Bool = false, capacity: Int = 0) {
        self.bigEndian = bigEndian
        bytes.reserveCapacity(capacity)
    }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }

    package mutating func u16(_ v: UInt16) { append(bigEndian ? v.bigEndian : v.littleEndian) }

    package mutating func u32(_ v: UInt32) { append(bigEndian ? v.bigEndian : v.littleEndian) }

    package mutating func u64(_ v: UInt64) { append(bigEndian ? v.bigEndian : v.littleEndian) }

    /// Appends raw bytes as they are.
    package mutating func raw(_ v: some Sequence<UInt8>) { bytes.append(contentsOf: v) }

    /// Appends zeros up to the next multiple of four bytes.
    package mutating func pad4() {
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    /// Overwrites four bytes at `offset` (a length known only at the end).
    package mutating func set32(_ v: UInt32, at offset: Int) {
        withUnsafeBytes(of: bigEndian ? v.bigEndian : v.littleEndian) { raw in
            for i in 0..<4 { bytes[offset + i] = raw[i] }
        }
    }

    private mutating func append<T: FixedWidthInteger>(_ stored: T) {
        withUnsafeBytes(of: stored) { bytes.append(contentsOf: $0) }
    }
}
