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

    /// A word and a string, equal for strings that are equal (`String.==`, canonical
    /// equivalence): an ASCII string's bytes by FNV-1a, folded as ``word(_:seed:)``.
    ///
    /// Canonical equivalence is why other text cannot simply be hashed by its bytes: "K" equals
    /// U+212A KELVIN SIGN. Only three characters outside ASCII are canonically equivalent to
    /// ASCII ones (U+212A K, U+037E ;, U+1FEF `; normalization is stable, so no more can come),
    /// so text that is ASCII once they are replaced hashes as that ASCII, and any other text
    /// goes to `Hasher`, which hashes a string's normalized form.
    package static func word(_ x: UInt64, _ text: String, seed: Int) -> Int {
        let start: UInt64 = 0xCBF2_9CE4_8422_2325 ^ x
        func fnv(_ h: inout UInt64, _ byte: UInt8) { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let ascii = text.utf8.withContiguousStorageIfAvailable { bytes -> UInt64? in
            var h = start
            var high: UInt8 = 0
            for byte in bytes {
                high |= byte
                fnv(&h, byte)
            }
            return high < 0x80 ? h : nil
        }
        if let ascii = ascii ?? nil { return word(ascii, seed: seed) }
        var h = start
        for scalar in text.unicodeScalars {
            let value: UInt32
            switch scalar.value {
            case 0x212A: value = 0x4B  // KELVIN SIGN ≡ K
            case 0x037E: value = 0x3B  // GREEK QUESTION MARK ≡ ;
            case 0x1FEF: value = 0x60  // GREEK VARIA ≡ `
            case let v: value = v
            }
            guard value < 0x80 else {
                var hasher = Hasher()
                hasher.combine(seed)
                hasher.combine(x)
                hasher.combine(text)
                return hasher.finalize()
            }
            fnv(&h, UInt8(value))
        }
        return word(h, seed: seed)
    }
}
