/// The signalling rate a device was enumerated at.
public enum USBSpeed: Hashable, Sendable, CustomStringConvertible {
    /// 1.5 Mbit/s.
    case low
    /// 12 Mbit/s.
    case full
    /// 480 Mbit/s.
    case high
    /// 5 Gbit/s.
    case superSpeed
    /// 10 Gbit/s.
    case superSpeedPlus
    /// 20 Gbit/s (two lanes).
    case superSpeedPlusDual

    /// Parses sysfs's `speed` attribute, in Mbit/s: `1.5`, `12`, `480`, `5000`, `10000`, `20000`.
    public init?(sysfs text: String) {
        switch text {
        case "1.5": self = .low
        case "12": self = .full
        case "480": self = .high
        case "5000": self = .superSpeed
        case "10000": self = .superSpeedPlus
        case "20000": self = .superSpeedPlusDual
        default: return nil
        }
    }

    /// The rate with its name, such as `high (480 Mbit/s)`.
    public var description: String {
        switch self {
        case .low: return "low (1.5 Mbit/s)"
        case .full: return "full (12 Mbit/s)"
        case .high: return "high (480 Mbit/s)"
        case .superSpeed: return "super (5 Gbit/s)"
        case .superSpeedPlus: return "super+ (10 Gbit/s)"
        case .superSpeedPlusDual: return "super+ (20 Gbit/s)"
        }
    }
}
