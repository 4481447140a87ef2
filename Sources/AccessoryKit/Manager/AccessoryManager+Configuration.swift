import AccessoryCore
import Logging

extension AccessoryManager {
    /// How a manager watches and filters accessories.
    public struct Configuration: Sendable {
        /// How often the registry is reconciled with sysfs when nothing else triggers it.
        public var reconcileInterval: Duration
        /// How long after a hotplug event the reconcile that follows it runs. Events in that
        /// wait join the same reconcile, so a long storm gets one reconcile per `debounce`
        /// (a throttle, not a wait for quiet: the registry catches up during the storm).
        public var debounce: Duration
        /// How long libusb's event thread may hold hotplug notices back, so that a storm's
        /// reach the manager in batches: a notice that comes within `hotplugBatching` of the
        /// last hand-off waits for the rest of that time, with those that join it; one after
        /// a quieter spell goes at once. `.zero` (the default) hands each pass's notices over
        /// at once, for the least latency. A display that a person reads (`accessoryctl
        /// watch` uses 10 ms) can trade those milliseconds for the CPU of a wake-up of the
        /// manager, and of each subscriber, per notice in a storm.
        public var hotplugBatching: Duration
        /// Only accessories speaking one of these protocols are shown, as an iOS app's
        /// `UISupportedExternalAccessoryProtocols`; `nil` shows every accessory.
        public var supportedProtocols: Set<String>?
        /// Declared protocols, by VID/PID or interface class.
        public var protocolTable: ProtocolTable
        /// Whether hubs (root hubs included) are shown.
        public var includeHubs: Bool
        /// The clock for the periodic reconcile and the debounce.
        public var clock: any Clock<Duration>
        /// Where sysfs lists USB devices.
        package var sysfsRoot: String
        /// Where to record every transfer the manager's sessions and control requests make,
        /// as a Linux usbmon capture (pcapng, link type 220) that Wireshark, `tshark` and
        /// `USBCapture` read: one `S` and one `C` record per transfer, each in the file before
        /// the transfer's completion reaches the caller. Each device's descriptors come first,
        /// as the GET_DESCRIPTOR answers of its enumeration, so that
        /// `SimulatedAccessory(replaying:device:)` can replay the file. A write that fails (a
        /// full disk) ends the capture at its last whole record and is kept in
        /// ``AccessoryManager/captureError``; the sessions go on. `nil` (the default) records
        /// nothing.
        public var capturePath: String?
        /// Where the manager logs; by default `accessorykit`, to whatever handler the
        /// application bootstrapped.
        public var logger: Logger
        /// Automatic recovery, and the ladder's `.command` step (the policy's `command`).
        /// After `afterTimeouts` transfer timeouts in a row in the one-transfer calls
        /// (``AccessorySession/transferIn(_:length:timeout:)``,
        /// ``AccessorySession/transferOut(_:_:timeout:)``) of the sessions on an accessory,
        /// with no call that worked between them, the manager runs the ladder on it up to
        /// `upTo` (trigger `3 timeouts on 0x81`); a stream's read or write that waits longer
        /// than its timeout is not a transfer timeout. With `vanishedFor`, a port whose
        /// accessory left (unplugged, or evicted as a ghost) and that nothing replaced for
        /// that long gets the ladder's power cycle, then the command (trigger `vanished for
        /// 10 s`). Each port gets at most `budget` automatic recoveries per `per`; beyond it,
        /// ``AccessoryManager/recoveries()`` reports the skip (``RecoveryReport/skipped``)
        /// and a warning is logged. One recovery per port runs at a time, in a task of its
        /// own. `nil` (the default): nothing is automatic and there is no command step.
        public var recovery: RecoveryPolicy?

        /// A configuration; the defaults suit most applications.
        public init(
            reconcileInterval: Duration = .seconds(2), debounce: Duration = .milliseconds(20),
            supportedProtocols: Set<String>? = nil, protocolTable: ProtocolTable = .init(),
            includeHubs: Bool = false, clock: any Clock<Duration> = ContinuousClock(),
            sysfsRoot: String = "/sys/bus/usb/devices", logger: Logger = Logger(label: "accessorykit"),
            capturePath: String? = nil, recovery: RecoveryPolicy? = nil, hotplugBatching: Duration = .zero
        ) {
            self.hotplugBatching = hotplugBatching
            self.capturePath = capturePath
            self.recovery = recovery
            self.reconcileInterval = reconcileInterval
            self.debounce = debounce
            self.supportedProtocols = supportedProtocols
            self.protocolTable = protocolTable
            self.includeHubs = includeHubs
            self.clock = clock
            self.sysfsRoot = sysfsRoot
            self.logger = logger
        }
    }
}
