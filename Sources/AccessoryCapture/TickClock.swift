/// Turns a pcapng interface's timestamp ticks into nanoseconds since the Unix epoch, by its
/// `if_tsresol` (10^-n or 2^-n seconds a tick) and `if_tsoffset` (seconds added).
///
/// Arithmetic wraps rather than traps: a hostile file gets a wrong time, never a crash.
struct TickClock: Sendable {
    private enum Scale {
        case multiply(Int64)
        case divide(UInt64)
        case binary(exponent: UInt64)
    }

    private let scale: Scale
    private let offset: Int64

    /// `nil` when `resolution` is out of range (beyond 10^-19 or 2^-63).
    init?(resolution: UInt8, offsetSeconds: Int64) {
        let exponent = Int(resolution & 0x7f)
        if resolution & 0x80 != 0 {
            guard exponent <= 63 else { return nil }
            scale = .binary(exponent: UInt64(exponent))
        } else if exponent <= 9 {
            scale = .multiply((0..<(9 - exponent)).reduce(1) { r, _ in r * 10 })
        } else {
            guard exponent <= 19 else { return nil }
            scale = .divide((0..<(exponent - 9)).reduce(1) { r, _ in r * 10 })
        }
        offset = offsetSeconds &* 1_000_000_000
    }

    func nanoseconds(_ ticks: UInt64) -> Int64 {
        let n: Int64
        switch scale {
        case .multiply(let m): n = Int64(truncatingIfNeeded: ticks) &* m
        case .divide(let d): n = Int64(truncatingIfNeeded: ticks / d)
        case .binary(let e):
            let (high, low) = ticks.multipliedFullWidth(by: 1_000_000_000)
            n = Int64(truncatingIfNeeded: e == 0 ? low : high << (64 - e) | low >> e)
        }
        return n &+ offset
    }
}
