/// Every hotplug decision in one value: the sans-IO core that any backend drives (libusb
/// here, `SimulatedUSB` in tests, a recorded trace, another OS's notifications, a daemon).
///
/// Inputs go in, each with its time on the driver's monotonic clock: a hotplug notice
/// (``arrived(_:portNow:at:)``, ``left(_:portIsExact:at:)``), a scan or a look at some ports
/// (``scanned(_:for:at:noticesPending:)``), a NO_DEVICE from an operation
/// (``noDevice(_:operation:at:)``), an overflow or a wake (``apply(_:at:)``), and the clock
/// reaching ``nextDeadline``
/// (``due(at:bootTime:)``). ``TrackerEffects`` come out: notifications to deliver, what a
/// recording gets, suspicions that proved false, and what to look at next. The tracker
/// reads no clock, file or device; the driver performs the effects, then arms one timer for
/// ``nextDeadline``.
///
/// It decides: whether an arrival is live or stale, what a LEFT event removes, how long an
/// entry the truth lacks waits for its LEFT event, what a NO_DEVICE means, sleep and wake,
/// overflow and resynchronization, links to the previous connection, cloned serials, which
/// devices are shown (``Configuration/includeHubs``, ``Configuration/supportedProtocols``,
/// the ``ProtocolTable`` applied here, once, to every device it is told of), and when to
/// reconcile.
///
/// ```swift
/// var tracker = AccessoryTracker(configuration: .init(), at: now)
/// var effects = tracker.arrived(device, portNow: sysfsLook(device.descriptor.port), at: now)
/// deliver(effects.events)
/// ```
public struct AccessoryTracker: Sendable {
    /// What the tracker shows and how patiently it waits.
    public struct Configuration: Sendable {
        /// Show hubs too.
        public var includeHubs: Bool
        /// Show only accessories that speak one of these (`nil`: every accessory).
        public var supportedProtocols: Set<String>?
        /// The application's protocol rules.
        public var protocolTable: ProtocolTable
        /// Whether hotplug notices arrive. Without them every look is a full one, and no entry
        /// waits for a LEFT event.
        public var hasHotplug: Bool
        /// How often to look at everything when nothing else asks.
        public var reconcileInterval: Duration
        /// How long after a hotplug notice to look at the ports it named.
        public var debounce: Duration

        /// A configuration; the defaults are the manager's.
        public init(
            includeHubs: Bool = false, supportedProtocols: Set<String>? = nil, protocolTable: ProtocolTable = .init(),
            hasHotplug: Bool = true, reconcileInterval: Duration = .seconds(2), debounce: Duration = .milliseconds(20)
        ) {
            self.includeHubs = includeHubs
            self.supportedProtocols = supportedProtocols
            self.protocolTable = protocolTable
            self.hasHotplug = hasHotplug
            self.reconcileInterval = reconcileInterval
            self.debounce = debounce
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    /// Every entry, shown and hidden (see ``ConnectionRegistry``).
    package internal(set) var registry: ConnectionRegistry
    /// Instances known gone, waits for LEFT events, suspects, stale arrivals.
    package internal(set) var policy: HotplugPolicy
    /// When to look, and at what.
    package internal(set) var schedule: ReconcileSchedule
    /// What the OS said of each entry, shown or hidden.
    var devices: [ConnectionID: USBDeviceInfo] = [:]
    /// The two clocks at the last periodic tick, to tell a sleep.
    var lastTick: (monotonic: Duration, boot: Duration)?
    /// Whether a recording of the monitor's view is being made: every look then reads
    /// everything and ``TrackerEffects/recorded`` gets its snapshot.
    public var isRecording = false
    /// Whether adds, removals, sleeps, wakes and overflows go to ``TrackerEffects/recorded``
    /// (always, for a driver that may record; a trace's playback, which keeps no recording,
    /// turns it off and copies no event for it).
    package var recordsNotices = true
    /// Whether every look the driver makes is authoritative (a trace's playback, whose looks
    /// are its snapshots). Such a look forgets every mark and reads everything, so a notice
    /// then marks no instance gone and names no port for the next look.
    package var looksAreAuthoritative = false
    /// A replayed trace's time (its records' `t`): while set, new connections are linked to
    /// the ones that ended by it instead of by the input's time.
    package var recordedTime: Duration?

    /// A tracker with no entries, its first periodic look due
    /// ``Configuration/reconcileInterval`` after `now`.
    /// - Parameters:
    ///   - configuration: what to show and how patiently to wait.
    ///   - now: the driver's monotonic clock now.
    ///   - bootTime: `CLOCK_BOOTTIME` now, if the driver can tell a sleep.
    public init(configuration: Configuration = .init(), at now: Duration, bootTime: Duration? = nil) {
        self.init(configuration: configuration, registry: ConnectionRegistry(), at: now, bootTime: bootTime)
    }

    /// A tracker that starts from `registry`'s entries (a replay's starting point).
    package init(configuration: Configuration = .init(), registry: ConnectionRegistry, at now: Duration, bootTime: Duration? = nil) {
        self.configuration = configuration
        self.registry = registry
        policy = HotplugPolicy(includeHubs: configuration.includeHubs, supportedProtocols: configuration.supportedProtocols)
        schedule = ReconcileSchedule(now: now, interval: configuration.reconcileInterval, debounce: configuration.debounce)
        lastTick = bootTime.map { (now, $0) }
    }

    // MARK: What it holds

    /// The accessories shown now, in connection-ID order.
    public var accessories: [Accessory] {
        registry.accessories.filter { !$0.connectionID.isHidden }
    }

    /// The shown accessory with this ID, if connected.
    public subscript(id: ConnectionID) -> Accessory? {
        id.isHidden ? nil : registry[id]
    }

    /// What the OS said of a shown accessory.
    public func device(_ id: ConnectionID) -> USBDeviceInfo? {
        guard !id.isHidden, let entry = registry[id] else { return nil }
        return devices[id] ?? USBDeviceInfo(descriptor: entry.descriptor)
    }

    /// The entry with this ID, shown or hidden.
    package func entry(_ id: ConnectionID) -> Accessory? { registry[id] }

    /// When the driver must call ``due(at:bootTime:)`` next.
    public var nextDeadline: Duration { schedule.nextDeadline }

    /// Whether a device is shown: not a hub (unless hubs are included), and speaking a
    /// supported protocol when only some are supported.
    public func isShown(_ device: USBDeviceInfo) -> Bool {
        policy.isVisible(device.descriptor, isHub: device.isHub)
    }

    // MARK: Inputs besides notices and looks

    /// An operation on connection `id` returned NO_DEVICE. On a real unplug that comes first,
    /// before sysfs drops the device and well before the LEFT event, so it only makes the
    /// connection suspect: the tracker asks for looks until the LEFT-event window (250 ms)
    /// has passed. A LEFT meanwhile makes the disconnect `unplugged`; the truth dropping the
    /// device makes it a ghost whose evidence names `operation`; the truth still listing it
    /// after the wait is a false alarm (``TrackerEffects/falseAlarms``).
    /// - Returns: `false` when `id` is not connected (nothing to judge).
    @discardableResult
    public mutating func noDevice(_ id: ConnectionID, operation: String, at now: Duration) -> Bool {
        guard registry[id] != nil else { return false }
        policy.suspect(id, operation: operation, at: now)
        schedule.receive(.noDevice, at: now)
        return true
    }

    /// Something changed on `port` that no notice may name (the driver reset the device
    /// there): the next debounced look reads it.
    public mutating func expectChange(onPort port: String, at now: Duration) {
        schedule.receive(.hotplug(ports: [port]), at: now)
    }

    /// The owner of connection `id` is about to make it re-enumerate in a new mode (an
    /// Android Open Accessory switch, a reset) and waits until `deadline`: a successor on its
    /// port by then is linked to it whatever its IDs.
    public mutating func expectModeSwitch(of id: ConnectionID, until deadline: Duration) {
        registry.expectModeSwitch(of: id, until: deadline)
    }

    /// The owner of connection `id` no longer waits for its mode switch.
    public mutating func endModeSwitch(of id: ConnectionID) {
        registry.endModeSwitch(of: id)
    }

    /// Says that a recovery is about to run `step` on connection `id` and waits for the
    /// accessory until `deadline` (the caller's clock): if the connection ends, its reason is
    /// `.recovered(step)`, and the same physical accessory back on its port by `deadline`
    /// names it as `Accessory.previousConnectionID`. Marking it again replaces the step.
    public mutating func expectRecovery(of id: ConnectionID, step: RecoveryStep, until deadline: Duration) {
        registry.expectRecovery(of: id, step: step, until: deadline)
    }

    /// Says that a recovery is about to bring back `accessory`, whose connection ended when
    /// it vanished, and waits for it until `deadline`: the same physical accessory back on
    /// its port by then names it as `Accessory.previousConnectionID`.
    public mutating func expectReturn(of accessory: Accessory, until deadline: Duration) {
        registry.expectReturn(of: accessory, until: deadline)
    }

    /// Says that the recovery of connection `id` is over (it worked, or the ladder gave up).
    public mutating func endRecovery(of id: ConnectionID) {
        registry.endRecovery(of: id)
    }

    /// Applies a monitor event as a recorded trace holds it: an add or a removal as a notice
    /// with no look at its port, a snapshot as the authoritative truth, and a sleep, wake or
    /// overflow as a reason to distrust the registry until the next look.
    public mutating func apply(_ event: HotplugEvent, at now: Duration) -> TrackerEffects {
        var effects = TrackerEffects()
        apply(event, at: now, into: &effects)
        return effects
    }

    /// ``apply(_:at:)``, appending its effects to `effects` (a replay of millions of records
    /// reuses one).
    package mutating func apply(_ event: consuming HotplugEvent, at now: Duration, into effects: inout TrackerEffects) {
        // Each case takes its payload; none binds the whole event, which would copy it.
        switch event {
        case .added(let d):
            added(d, at: now, into: &effects)
        case .removed(let r):
            left(r, at: now, into: &effects)
        case .snapshot(let truth):
            effects.append(snapshot(truth.map { USBDeviceInfo(descriptor: $0) }, at: now))
        case .sleep, .wake, .overflow:
            if recordsNotices { effects.recorded.append(copy event) }
            registry.now = recordedTime ?? now
            var events: [AccessoryEvent] = []
            if registry.apply(event, into: &events) != nil { schedule.receive(.suspicion, at: now) }
            deliver(events, devices: [:], into: &effects)
        }
    }

    /// Reconciles with `truth` taken as authoritative, as a trace's snapshot is: no instance
    /// counts as dead for lagging behind its LEFT event, and no entry waits for one.
    public mutating func snapshot(_ truth: [USBDeviceInfo], at now: Duration) -> TrackerEffects {
        let plan = beginAuthoritativeLook()
        return scanned(truth, for: plan, at: now)
    }

    /// Forgets every mark and every wait, and begins a look whose result is authoritative.
    package mutating func beginAuthoritativeLook() -> ReconcilePlan {
        policy.forgetGone()
        return beginLook(.snapshot)
    }

    /// Disconnects everything with reason `shutdown`, in ID order.
    public mutating func shutdown() -> TrackerEffects {
        var effects = TrackerEffects()
        deliver(registry.shutdown(), devices: [:], into: &effects)
        return effects
    }

    // MARK: Delivery

    /// Keeps ``devices`` in step with `events` and appends the shown ones to `effects`. A
    /// device that says no more than its descriptor is not kept (``device(_:)`` makes it).
    mutating func deliver(_ events: [AccessoryEvent], devices infos: [AccessoryDescriptor: USBDeviceInfo], into effects: inout TrackerEffects) {
        deliver(events, device: { infos.isEmpty ? nil : infos[$0] }, into: &effects)
    }

    /// ``deliver(_:devices:into:)`` with the devices' lookup as a function.
    mutating func deliver(
        _ events: [AccessoryEvent], device info: (AccessoryDescriptor) -> USBDeviceInfo?, into effects: inout TrackerEffects
    ) {
        for event in events {
            switch event {
            case .connected(let accessory):
                if let known = info(accessory.descriptor), !known.isBareDescriptor { devices[accessory.connectionID] = known }
                if accessory.connectionID.isHidden { continue }
            case .disconnected(let accessory, _):
                policy.forget(accessory.connectionID)
                if !devices.isEmpty { devices[accessory.connectionID] = nil }
                if accessory.connectionID.isHidden { continue }
            }
            effects.events.append(event)
        }
    }

    /// ``deliver(_:device:into:)`` for the events the registry appended to `effects.events`
    /// from `start` on, where they lie: keeps ``devices`` in step (`device` is kept for the
    /// entry whose connection has its descriptor) and takes the hidden ones out. (A batch
    /// connects no ID it disconnects, so the devices can be kept first.)
    mutating func deliverAppended(from start: Int, device: USBDeviceInfo, into effects: inout TrackerEffects) {
        if !device.isBareDescriptor {
            for i in start..<effects.events.count where effects.events[i].connection.connected {
                let accessory = effects.events[i].accessory
                if device.descriptor == accessory.descriptor { devices[accessory.connectionID] = device }
            }
        }
        deliverAppended(from: start, into: &effects)
    }

    /// ``deliverAppended(from:device:into:)`` with no device to keep (a removal, a bare
    /// device): forgets what is kept of the connections that ended and takes the hidden
    /// events out. No event is copied.
    mutating func deliverAppended(from start: Int, into effects: inout TrackerEffects) {
        var i = start
        while i < effects.events.count {
            let (id, connected) = effects.events[i].connection
            if !connected {
                policy.forget(id)
                if !devices.isEmpty { devices[id] = nil }
            }
            if id.isHidden { effects.events.remove(at: i) } else { i += 1 }
        }
    }

    /// The protocols a device speaks, by the table, set on its descriptor: from its
    /// configuration where known, else what it already says plus the rules that match it.
    func resolvingProtocols(_ device: USBDeviceInfo) -> USBDeviceInfo {
        var device = device
        resolveProtocols(&device)
        return device
    }

    /// ``resolvingProtocols(_:)`` in place (a device is large: no copy of it per arrival).
    func resolveProtocols(_ device: inout USBDeviceInfo) {
        let table = configuration.protocolTable
        if device.configuration != nil {
            device.descriptor.protocols = table.protocols(for: device)
        } else if let matched = table.protocols(for: device), !matched.isEmpty {
            var names = device.descriptor.protocols ?? []
            for name in matched where !names.contains(name) { names.append(name) }
            device.descriptor.protocols = names
        }
    }
}
