/// Cheap hashes for the registry's hot dictionary keys, in place of SipHash.
///
/// A replay looks keys up several times per event, and SipHash's set-up and finish were a tenth
/// of its CPU. Each function mixes in the table's per-instance seed (which `Dictionary` draws
/// from the process's random seed), and a registry's tables hold at most a few thousand live
/// keys, so even chosen colliding keys could only slow lookups, never break them.
package enum TableHash {
    /// One 64-bit word, multiplied by the golden ratio and folded.
    @inline(__always)
    package static func word(_ x: UInt64, seed: Int) -> Int {
        var h = (x ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        return Int(truncatingIfNeeded: h)
    }

    /// A word and a short string's UTF-8 bytes (FNV-1a), folded as ``word(_:seed:)``.
    @inline(__always)
    package static func word(_ x: UInt64, _ text: String, seed: Int) -> Int {
        func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
            var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ x
            for byte in bytes { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            return h
        }
        let h = text.utf8.withContiguousStorageIfAvailable { fnv($0) } ?? fnv(text.utf8)
        return word(h, seed: seed)
    }
}
