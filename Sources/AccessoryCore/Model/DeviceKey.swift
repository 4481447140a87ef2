/// Bus number and device address: a lookup key for a device instance, never an identity.
///
/// Addresses wrap after 127 and are reused, so two different attaches can share a key.
package struct DeviceKey: Hashable, Sendable, CustomStringConvertible {
    package var bus: Int
    package var address: Int

    package init(bus: Int, address: Int) {
        self.bus = bus
        self.address = address
    }

    package var description: String { "\(bus):\(address)" }

    /// One integer to hash: a registry looks keys up on every event.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(bus << 32 | address & 0xFFFF_FFFF)
    }

    /// `Dictionary`'s and `Set`'s hash: the same integer, mixed by ``TableHash`` rather than
    /// SipHash (the tracker marks and finds keys on every event).
    package func _rawHashValue(seed: Int) -> Int {
        TableHash.word(UInt64(UInt(bitPattern: bus << 32 | address & 0xFFFF_FFFF)), seed: seed)
    }

    /// The instance's usbfs node, `/dev/bus/usb/BBB/DDD`.
    package var devicePath: String {
        func threeDigits(_ n: Int) -> String {
            let s = String(n)
            return s.count >= 3 ? s : String(repeating: "0", count: 3 - s.count) + s
        }
        return "/dev/bus/usb/\(threeDigits(bus))/\(threeDigits(address))"
    }
}

/// Bus number and kernel port chain (such as `1-1.4`): where a device is plugged in.
public struct PortKey: Hashable, Sendable, CustomStringConvertible {
    /// USB bus number.
    public var bus: Int
    /// Kernel port chain, such as `1-1.4`.
    public var port: String

    package init(bus: Int, port: String) {
        self.bus = bus
        self.port = port
    }

    /// The port chain.
    public var description: String { port }

    /// `Dictionary`'s hash: a registry finds a port on every arrival (see ``TableHash``).
    /// (SPI: it is `Hashable`'s witness, but no part of the public API.)
    @_spi(TableHash) public func _rawHashValue(seed: Int) -> Int {
        TableHash.word(UInt64(UInt(bitPattern: bus)), port, seed: seed)
    }
}
