import AccessoryCore
/// Where the JSON encoders write: a growing `[UInt8]`, or a ``ScratchBytes`` buffer that a
/// hot loop fills with plain stores and copies out once.
protocol ByteOutput {
    mutating func append(_ byte: UInt8)
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer)
}

extension Array: ByteOutput where Element == UInt8 {
    @inline(__always)
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
        append(contentsOf: bytes)
    }
}

/// A fixed buffer the caller owns (on the stack, say). Writes past its end are dropped and
/// remembered in ``overflowed``, so that the caller can encode again into an array.
struct ScratchBytes: ByteOutput {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// The bytes written so far.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        guard count < capacity else {
            overflowed = true
            return
        }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= capacity - count else {
            overflowed = true
            return
        }
        if let source = bytes.baseAddress { (base + count).copyMemory(from: source, byteCount: bytes.count) }
        count += bytes.count
    }
}
