import AccessoryCore
import Glibc

/// Strings a trace repeats on every line (manufacturers, product names), decoded once:
/// a later string with the same bytes shares the first one's storage instead of allocating
/// and validating a copy.
///
/// A fixed table of 1,024 slots indexed by a hash of the bytes; a collision replaces the
/// slot, so memory stays bounded whatever the trace holds. Only plain ASCII longer than 15
/// bytes is kept: shorter strings live inside the `String` value and cost no allocation.
struct StringTable: Sendable {
    private var slots: [String?]

    /// A table that keeps nothing (every string is decoded afresh).
    static let empty = StringTable(slots: [])

    /// A table of 1,024 slots.
    init() { self.init(slots: [String?](repeating: nil, count: 1024)) }

    private init(slots: [String?]) { self.slots = slots }

    /// The string spelled by `bytes`, which must be plain ASCII (no escapes).
    mutating func string(_ bytes: UnsafeRawBufferPointer) -> String {
        guard bytes.count > 15, bytes.count <= 256, !slots.isEmpty else { return String(decoding: bytes, as: UTF8.self) }
        var hash: UInt32 = 2_166_136_261  // FNV-1a
        for b in bytes { hash = (hash ^ UInt32(b)) &* 16_777_619 }
        let slot = Int(hash & 1023)
        if var cached = slots[slot] {
            let same = cached.withUTF8 { $0.count == bytes.count && memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            if same { return cached }
        }
        let s = String(decoding: bytes, as: UTF8.self)
        slots[slot] = s
        return s
    }
}
