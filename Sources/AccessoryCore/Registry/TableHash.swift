/// Cheap keyed hashes for the registry's hot dictionary keys, in place of SipHash.
///
/// A replay looks keys up several times per event, so the hash's fixed cost counts, and
/// SipHash's set-up and finish are most of its cost on keys this short. These hashes are a
/// folded multiply (the 128-bit product's halves XORed, as aHash and wyhash do) keyed by
/// ``secret``, two words drawn from the system's random source once per process, and by the
/// table's seed (which `Dictionary` takes from its storage's address, so it alone is no
/// secret). Serials and ports come from devices, traces and `udevadm` logs; without the
/// process's secret an input cannot choose keys that collide, so a hostile file cannot make a
/// replay or an import quadratic.
package enum TableHash {
    /// The process's secret: drawn once, on first use, from `SystemRandomNumberGenerator`
    /// (the kernel's `getrandom`). The second word is odd, so multiplying by it loses no bit.
    package static let secret: (UInt64, UInt64) = {
        var random = SystemRandomNumberGenerator()
        return (random.next(), random.next() | 1)
    }()

    /// The product of `a` and `b`, its high and low halves XORed.
    @inline(__always)
    static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (high, low) = a.multipliedFullWidth(by: b)
        return high ^ low
    }

    /// One 64-bit word.
    @inline(__always)
    package static func word(_ x: UInt64, seed: Int) -> Int {
        let key = secret
        return Int(truncatingIfNeeded: fold(x ^ key.0 ^ UInt64(UInt(bitPattern: seed)), key.1))
    }

    /// A word and a string, equal for strings that are equal (`String.==`, canonical
    /// equivalence): an ASCII string is hashed by its bytes, eight at a time.
    ///
    /// Canonical equivalence is why other text cannot simply be hashed by its bytes: "K" equals
    /// U+212A KELVIN SIGN. Only three characters outside ASCII are canonically equivalent to
    /// ASCII ones (U+212A K, U+037E ;, U+1FEF `; normalization is stable, so no more can come),
    /// so text that is ASCII once they are replaced hashes as that ASCII, and any other text
    /// goes to `Hasher` (keyed by the process's own random seed), which hashes a string's
    /// normalized form.
    package static func word(_ x: UInt64, _ text: String, seed: Int) -> Int {
        let ascii = text.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            var high: UInt8 = 0
            for byte in bytes { high |= byte }
            return high < 0x80 ? word(x, asciiBytes: UnsafeRawBufferPointer(bytes), seed: seed) : nil
        }
        if let ascii = ascii ?? nil { return ascii }
        var mapped: [UInt8] = []
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x212A: mapped.append(0x4B)  // KELVIN SIGN ≡ K
            case 0x037E: mapped.append(0x3B)  // GREEK QUESTION MARK ≡ ;
            case 0x1FEF: mapped.append(0x60)  // GREEK VARIA ≡ `
            case let v where v < 0x80: mapped.append(UInt8(v))
            default:
                var hasher = Hasher()
                hasher.combine(seed)
                hasher.combine(x)
                hasher.combine(text)
                return hasher.finalize()
            }
        }
        return mapped.withUnsafeBytes { word(x, asciiBytes: $0, seed: seed) }
    }

    /// Bytes in little-endian words of eight, the last padded with zeros, each folded into the
    /// state with the secret; the length last, so that padding cannot collide.
    @inline(__always)
    static func word(_ x: UInt64, asciiBytes bytes: UnsafeRawBufferPointer, seed: Int) -> Int {
        let key = secret
        var h = fold(x ^ key.0 ^ UInt64(UInt(bitPattern: seed)), key.1)
        var offset = 0
        let count = bytes.count
        while offset + 8 <= count {
            let w = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            h = fold(h ^ w ^ key.0, key.1)
            offset += 8
        }
        if offset < count {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while offset < count {
                w |= UInt64(bytes[offset]) << shift
                shift += 8
                offset += 1
            }
            h = fold(h ^ w ^ key.0, key.1)
        }
        return Int(truncatingIfNeeded: fold(h ^ UInt64(count), key.1 ^ key.0))
    }
}
