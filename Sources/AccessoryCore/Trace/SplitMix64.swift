/// SplitMix64: a tiny seeded pseudo-random generator. The same seed gives the same numbers
/// on every run and platform, which is what fault injection and generated traces need.
public struct SplitMix64: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `0 ..< 1`.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// Uniform in `0 ..< bound`; `bound` must be positive.
    public mutating func next(below bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool {
        nextUnit() < p
    }
}
