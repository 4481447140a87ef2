/// The hub class requests (USB 2.0 §11.24, USB 3.2 §10.16) that port power uses.
enum HubRequest {
    /// `PORT_POWER`, the port feature that switches a port's power.
    static let portPower: UInt16 = 8

    /// GET_DESCRIPTOR of the hub descriptor: type 0x29, or 0x2A for a SuperSpeed hub.
    static func hubDescriptor(superSpeed: Bool) -> ControlRequest {
        ControlRequest(.class, request: 6, value: (superSpeed ? 0x2A : 0x29) << 8)
    }

    /// GET_STATUS of port `n` (4 bytes: wPortStatus, wPortChange).
    static func portStatus(_ n: Int) -> ControlRequest {
        ControlRequest(.class, recipient: .other, request: 0, index: UInt16(n))
    }

    /// SET_FEATURE (on) or CLEAR_FEATURE (off) of `PORT_POWER` on port `n`.
    static func portPower(_ n: Int, on: Bool) -> ControlRequest {
        ControlRequest(.class, recipient: .other, request: on ? 3 : 1, value: portPower, index: UInt16(n))
    }

    /// The `PORT_POWER` bit of wPortStatus: bit 8, bit 9 on a SuperSpeed hub.
    static func powerBit(superSpeed: Bool) -> UInt16 { superSpeed ? 0x0200 : 0x0100 }
}
