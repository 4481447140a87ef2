/// The identity of one attach of one accessory, as `EAAccessory.connectionID`.
///
/// A registry mints IDs from 1 upward, once per attach, and never reuses one while it lives.
/// ``none`` (0) means "no connection", like `EAConnectionIDNone`.
public struct ConnectionID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// No connection (0).
    public static let none = ConnectionID(rawValue: 0)

    /// Where the IDs of devices a manager hides (hubs, unsupported protocols) start: they
    /// never take a number users see.
    package static let hiddenBase: UInt64 = 1 << 62

    /// Whether this is the ID of a device the manager hides.
    package var isHidden: Bool { rawValue >= Self.hiddenBase }

    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }

    /// IDs are minted counting up, never taken from a device or a file, so no input can choose
    /// colliding keys: `Dictionary` (which calls this requirement) gets a cheap mix, not SipHash.
    /// (SPI: it is `Hashable`'s witness, but no part of the public API.)
    @_spi(TableHash) public func _rawHashValue(seed: Int) -> Int {
        TableHash.word(rawValue, seed: seed)
    }
}
