/// How a hub switches its ports' power, as bits 1:0 of its hub descriptor's
/// `wHubCharacteristics` say (and as `uhubctl` reads them).
package enum PortPowerSwitching: String, Sendable, Hashable, CaseIterable {
    /// `01`: each port on its own; the only kind a power cycle can use.
    case perPort = "per-port"
    /// `00`: all ports together.
    case ganged
    /// `1x`: not at all (the port power is always on).
    case none

    /// The switching that `wHubCharacteristics` describes.
    package init(hubCharacteristics: UInt16) {
        switch hubCharacteristics & 0x3 {
        case 0: self = .ganged
        case 1: self = .perPort
        default: self = .none
        }
    }

    /// Why a hub with this switching cannot power-cycle one port, naming the hub; `nil` for
    /// per-port switching.
    package func refusal(hub: String) -> String? {
        switch self {
        case .perPort: nil
        case .ganged: "hub \(hub) switches its ports together (ganged)"
        case .none: "hub \(hub) cannot switch its ports' power (no power switching)"
        }
    }
}
