import AccessoryCore
/// SplitMix64: a tiny seeded pseudo-random generator. The same seed gives the same numbers
/// on every run and platform, which is what fault injection and generated traces need.
package struct SplitMix64: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `0 ..< 1`.
    package mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// Uniform in `0 ..< bound`; `bound` must be positive.
    package mutating func next(below bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// `count` pseudo-random bytes, eight per number (for test and benchmark payloads).
    package mutating func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var i = 0
            while i + 8 <= count {
                raw.storeBytes(of: next(), toByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < count {
                raw[i] = UInt8(truncatingIfNeeded: next())
                i += 1
            }
            initialized = count
        }
    }

    /// True with probability `p`.
    package mutating func chance(_ p: Double) -> Bool {
        nextUnit() < p
    }
}
