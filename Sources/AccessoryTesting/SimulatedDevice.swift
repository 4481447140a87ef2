import AccessoryCore

/// One attach of a ``SimulatedAccessory``: where it sits now. A re-enumeration
/// (``SimulatedUSB/replug(_:silently:)``) gives a new `SimulatedDevice` on the same port.
public struct SimulatedDevice: Sendable, Hashable, CustomStringConvertible {
    /// The bus number.
    public var bus: Int
    /// The device address on the bus (1–127), new at each attach.
    public var address: Int
    /// The port chain, such as `1-2`.
    public var port: String
    /// The accessory attached.
    public var accessory: SimulatedAccessory

    /// A device as the test describes it, for example to ``SimulatedUSB/send(_:for:)`` an
    /// event about a device that was never plugged.
    public init(bus: Int, address: Int, port: String, accessory: SimulatedAccessory) {
        self.bus = bus
        self.address = address
        self.port = port
        self.accessory = accessory
    }

    /// `VID:PID SERIAL on PORT (bus B, address A)`.
    public var description: String {
        return "\(Hex.four(accessory.vendor)):\(Hex.four(accessory.product))\(accessory.serial.map { " \($0)" } ?? "") on \(port) (bus \(bus), address \(address))"
    }
}
