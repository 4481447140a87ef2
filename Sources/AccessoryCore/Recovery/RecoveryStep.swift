/// One rung of the recovery ladder, in the order the ladder tries them: each is harsher than
/// the one before, and `Comparable` follows that order.
public enum RecoveryStep: Int, CaseIterable, Comparable, Hashable, Sendable, CustomStringConvertible {
    /// A port reset (`USBDEVFS_RESET`, `libusb_reset_device`): the device may stay in place or
    /// re-enumerate.
    case reset
    /// sysfs `authorized` 0 then 1: a logical disconnect and re-enumeration; power stays on.
    case reauthorize
    /// The port's power off, a pause, then on: the port's sysfs `disable` file, else the hub's
    /// `PORT_POWER` feature, on both halves of a USB 3 hub.
    case powerCycle
    /// The configured external command (a network power strip, a relay).
    case command

    public static func < (a: RecoveryStep, b: RecoveryStep) -> Bool { a.rawValue < b.rawValue }

    /// The name the command line and reports use: `reset`, `reauthorize`, `power-cycle` or
    /// `command`.
    public var name: String {
        switch self {
        case .reset: return "reset"
        case .reauthorize: return "reauthorize"
        case .powerCycle: return "power-cycle"
        case .command: return "command"
        }
    }

    /// The step that ``name`` names, or `nil`.
    public init?(name: String) {
        guard let step = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = step
    }

    /// What the step does, in words: `port reset`, `reauthorized`, `port power cycle`,
    /// `external command`.
    public var description: String {
        switch self {
        case .reset: return "port reset"
        case .reauthorize: return "reauthorized"
        case .powerCycle: return "port power cycle"
        case .command: return "external command"
        }
    }

    /// The steps of a ladder that goes up to `last`, in order.
    public static func ladder(upTo last: RecoveryStep) -> [RecoveryStep] {
        allCases.filter { $0 <= last }
    }
}
