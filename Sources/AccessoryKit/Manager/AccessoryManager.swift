import AccessoryCore
import Logging

/// The connected USB accessories, kept in step with the OS, and their connect and
/// disconnect notifications: `EAAccessoryManager` for Linux, without ghosts.
///
/// The manager subscribes to libusb hotplug events first, then takes a sysfs snapshot, so
/// no attach falls in between. Hotplug events drive a `ConnectionRegistry`; reconciles
/// against a fresh sysfs scan evict ghosts and admit devices whose events were lost. A
/// reconcile runs shortly after hotplug events (one per ``Configuration/debounce``), every
/// ``Configuration/reconcileInterval``, after the system has slept, when the registry
/// suspects it is out of step, when a transfer finds a device gone and on ``refresh()``.
///
/// Every connection gets a fresh `ConnectionID`. A subscriber sees exactly one
/// `.connected` per ID before at most one `.disconnected`, and the disconnect of a stale ID
/// before the connect of its successor on the same port.
public actor AccessoryManager {

    /// What the manager keeps per registered connection besides the registry entry.
    struct Entry: Sendable {
        var info: USBDeviceInfo
        /// Hidden connections (hidden IDs, see ``ConnectionRegistry``) are not announced
        /// until a refresh shows they speak a supported protocol after all.
        var visible: Bool
    }

    /// The configuration the manager was started with.
    public nonisolated let configuration: Configuration
    /// Whether hotplug events arrive. Without them (no libusb, or no hotplug support) the
    /// manager still finds every change, one reconcile interval late.
    package nonisolated let isHotplugAvailable: Bool
    /// The libusb version, or `nil` when libusb could not start.
    package nonisolated let libusbVersion: String?

    /// The hardware: the OS truth, hotplug notices and devices. Sessions open devices
    /// through it.
    nonisolated let host: any USBHost
    let logger: Logger

    var registry = ConnectionRegistry()
    var entries: [ConnectionID: Entry] = [:]
    /// Every subscriber: ``events(includingCurrent:)``, ``updates(includingCurrent:bufferLimit:)``,
    /// ``monitorEvents()`` and ``observe(_:)``.
    nonisolated let fanOut = SubscriberFanOut()
    private(set) var isShutDown = false
    /// Open sessions and opens under way, by connection and protocol (see
    /// AccessoryManager+Sessions.swift): what closing each needs, and its handle weakly, so
    /// a dropped session is closed, not leaked.
    var sessions = SessionTable<SessionEntry>()
    private var lastUptime: SystemUptime
    private var monitorTask: Task<Void, Never>?
    /// When to reconcile, and what the next one reads (a debounced one reads only the ports
    /// hotplug events named: a farm's storm on one port must not rescan every device).
    private var schedule: ReconcileSchedule
    /// The one timer armed on the host, for the schedule's next deadline.
    private var armed: (id: UInt64, at: Duration, timer: HostTimer)?
    private var timersArmed: UInt64 = 0
    /// A replayed trace's time (its records' `t`): while set, the registry dates its events
    /// by it instead of the host's clock, so re-enumeration links come out as in
    /// `accessoryctl replay`.
    package var recordedTime: Duration?
    /// The time the registry dates events by.
    var registryTime: Duration { recordedTime ?? host.uptime().monotonic }
    /// The judgement calls: instances known gone, waits for LEFT events, stale arrivals,
    /// visibility (see ``HotplugPolicy``).
    var policy: HotplugPolicy
    /// Sessions' data planes waiting for the verdict on a NO_DEVICE.
    private var suspectPipes = SuspectPipes()

    /// Starts watching: subscribes to hotplug, then reconciles a first sysfs snapshot, whose
    /// devices become the first `.connected` events.
    ///
    /// When libusb cannot start (for example on a machine without USB), the manager logs a
    /// notice and relies on its periodic sysfs reconcile alone.
    /// - Throws: ``AccessoryError`` when libusb starts but hotplug registration or the event
    ///   thread fails; `.invalidArgument` for a configuration duration out of its range
    ///   (`reconcileInterval` 1 ms...49.7 days, `debounce` 0...49.7 days).
    public init(configuration: Configuration = .init()) async throws(AccessoryError) {
        try configuration.validate()
        let host = SystemUSBHost(
            sysfsRoot: configuration.sysfsRoot, protocolTable: configuration.protocolTable, logger: configuration.logger,
            reconcileInterval: configuration.reconcileInterval, clock: configuration.clock)
        try await self.init(configuration: configuration, host: host)
    }

    /// A manager over any host: the system's, or a simulated one.
    package init(configuration: Configuration, host: any USBHost) async throws(AccessoryError) {
        try configuration.validate()
        self.configuration = configuration
        if let path = configuration.capturePath {
            self.host = CapturingHost(host, recorder: try CaptureRecorder(path: path, logger: configuration.logger))
        } else {
            self.host = host
        }
        self.policy = HotplugPolicy(includeHubs: configuration.includeHubs, supportedProtocols: configuration.supportedProtocols)
        self.logger = configuration.logger
        self.libusbVersion = host.version
        // Subscribe first, then take the snapshot: no attach can fall in between.
        let notices = try host.startMonitoring()
        self.isHotplugAvailable = notices != nil
        self.lastUptime = host.uptime()
        self.schedule = ReconcileSchedule(
            now: lastUptime.monotonic, interval: configuration.reconcileInterval, debounce: configuration.debounce)

        reconcile(.initial)
        logger.debug(
            "started: \(connectedAccessories.count) accessories, hotplug \(notices != nil ? "on" : "off"), libusb \(libusbVersion ?? "unavailable")")
        if let notices {
            monitorTask = Task { [weak self] in
                // A batch is everything that queued while the last one was handled: in a
                // storm, one wake-up and one hop onto the actor for many notices.
                while true {
                    let batch = await notices.next()
                    guard !batch.isEmpty, let self else { return }
                    await self.handle(batch)
                    for notice in batch { self.host.didHandle(notice) }
                }
            }
        }
        arm()
    }

    deinit {
        host.stopMonitoring()
        monitorTask?.cancel()
        armed?.timer.cancel()
        fanOut.finish()
    }

    // MARK: Public API

    /// The accessories connected now, in connection-ID order.
    public var connectedAccessories: [Accessory] {
        registry.accessories.filter { entries[$0.connectionID]?.visible == true }
    }

    /// A new stream of notifications. Each call makes a new subscriber; every subscriber
    /// gets every notification, with an unbounded buffer so a slow one never blocks anyone
    /// (a subscriber that stops reading grows it without limit: where that can happen, use
    /// the bounded ``updates(includingCurrent:bufferLimit:)``).
    ///
    /// - Parameter includingCurrent: first yield `.connected` for every accessory already
    ///   connected, atomically with subscribing: nothing is missed or repeated.
    /// - Returns: a stream that finishes at ``shutdown()``; after it, a finished stream.
    public func events(includingCurrent: Bool = true) -> AsyncStream<AccessoryEvent> {
        fanOut.events(first: includingCurrent ? connectedAccessories.map(AccessoryEvent.connected) : [])
    }

    /// A new bounded stream of notifications: as ``events(includingCurrent:)``, but when more
    /// than `bufferLimit` wait unread, they collapse into a
    /// ``AccessoryUpdate/resynchronized(missed:)`` mark followed by the difference between
    /// what this subscriber has seen and the accessories connected now (see
    /// ``AccessoryUpdates``). Memory stays bounded however far behind it falls.
    public func updates(includingCurrent: Bool = true, bufferLimit: Int = 1024) -> AccessoryUpdates {
        fanOut.updates(limit: bufferLimit, current: connectedAccessories, includingCurrent: includingCurrent)
    }

    /// How many subscribers are registered, observers included (for tests and diagnostics).
    package var subscriberCount: Int { fanOut.count }

    /// Reconciles now with a fresh sysfs scan.
    /// - Returns: what the reconcile did; its events are those subscribers were sent.
    public func refresh() async -> Reconciler.Report {
        guard !isShutDown else { return .none }
        return reconcile(.refresh)
    }

    /// Everything the OS says about a connected accessory: class, speed, configuration.
    package func deviceInfo(for id: ConnectionID) -> USBDeviceInfo? {
        guard let entry = entries[id], entry.visible, registry[id] != nil else { return nil }
        return entry.info
    }

    /// Tells the manager that an operation on an accessory returned NO_DEVICE. On a real
    /// unplug that comes first, before sysfs drops the device and well before the hotplug
    /// event, so it only makes the connection suspect: the manager looks at sysfs soon and
    /// again until ``HotplugPolicy/leftEventWindow`` has passed. A LEFT event meanwhile makes
    /// the disconnect `unplugged`; sysfs dropping the device with no LEFT event makes it a
    /// ghost whose evidence names `operation`; sysfs still listing the same instance after
    /// the wait makes it a false alarm (a missing device node, say), and the connection stays.
    package func reportNoDevice(_ id: ConnectionID, operation: String) {
        guard !isShutDown, registry[id] != nil else { return }
        logger.debug("\(operation) on connection \(id) returned NO_DEVICE; confirming")
        policy.suspect(id, operation: operation, at: host.uptime().monotonic)
        note(.noDevice)
    }

    /// A session's transfer found its device (maybe) gone. The manager ends `pipe` once it
    /// knows: with the connection's disconnect, or with an I/O error when sysfs still lists
    /// the accessory after the wait.
    func sessionSawDeviceGone(_ id: ConnectionID, _ sign: DeviceGoneSign, pipe: DataPlane, label: String) {
        guard !isShutDown, registry[id] != nil else {
            // Already disconnected (the pipe has its reason) or shutting down.
            pipe.fail(AccessorySession.disconnectedError(.ghostEvicted(.noDevice(operation: sign.operation)), label: label))
            return
        }
        suspectPipes.add(id, pipe: pipe, sign: sign, label: label)
        reportNoDevice(id, operation: sign.operation)
    }

    /// Stops watching: stops the event thread, deregisters hotplug, sends
    /// `.disconnected(_, .shutdown)` for every connected accessory and finishes every
    /// stream. Idempotent.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        armed?.timer.cancel()
        armed = nil
        // Sessions first: closing them needs the event thread to complete their transfers.
        await closeSessionsAtShutdown()
        host.stopMonitoring()
        deliver(registry.shutdown(), infos: [:])
        fanOut.finish()  // observers too: they may hold what holds the manager
        await monitorTask?.value
        logger.debug("stopped")
    }

    /// A new stream of the monitor's own view, for recording traces: first a `.snapshot`
    /// of the accessories connected now, then every hotplug `add` and `remove` as it is
    /// applied, a `.snapshot` of the OS truth at every reconcile, and `.sleep`/`.wake` when a
    /// system sleep is detected. Hidden devices (hubs, unsupported protocols) are left out.
    public func monitorEvents() -> AsyncStream<HotplugEvent> {
        fanOut.monitor(first: .snapshot(connectedAccessories.map(\.descriptor)))
    }

    func tap(_ event: HotplugEvent) {
        fanOut.tap(event)
    }

    func apply(_ event: HotplugEvent, arrival: USBDeviceInfo? = nil, shown: Bool = true) {
        if arrival.map(isVisible) ?? true { tap(event) }
        registry.now = registryTime
        let update = registry.apply(event, isShown: { _ in shown && (arrival.map(isVisible) ?? true) })
        deliver(update.events, infos: arrival.map { [$0.descriptor: $0] } ?? [:])
        if let suspicion = update.suspicion {
            logger.debug("registry suspects it is out of step (\(suspicion)); reconciling")
            note(.suspicion)
        }
    }

    /// Sends the visible notifications to every subscriber and keeps ``entries`` in step.
    /// - Returns: the notifications that were sent.
    @discardableResult
    func deliver(_ events: [AccessoryEvent], infos: [AccessoryDescriptor: USBDeviceInfo]) -> [AccessoryEvent] {
        var sent: [AccessoryEvent] = []
        for event in events {
            switch event {
            case .connected(let accessory):
                let info = infos[accessory.descriptor]
                    ?? USBDeviceInfo(descriptor: accessory.descriptor, deviceClass: 0)
                let visible = !accessory.connectionID.isHidden
                entries[accessory.connectionID] = Entry(info: info, visible: visible)
                guard visible else { continue }
                logger.debug(
                    "connected \(accessory.connectionID): \(accessory.descriptor.vendorProduct) \(accessory.physicalIdentity) on \(accessory.descriptor.port) address \(accessory.descriptor.address.map(String.init) ?? "?")")
            case .disconnected(let accessory, let reason):
                endSessions(of: accessory.connectionID, reason: reason)
                policy.forget(accessory.connectionID)
                suspectPipes.disconnected(accessory.connectionID, reason: reason)
                guard entries.removeValue(forKey: accessory.connectionID)?.visible == true else { continue }
                logger.debug("disconnected \(accessory.connectionID) (\(accessory.physicalIdentity)): \(reason)")
            }
            sent.append(event)
            fanOut.send(event)
        }
        return sent
    }

    func isVisible(_ info: USBDeviceInfo) -> Bool {
        policy.isVisible(info.descriptor, isHub: info.isHub)
    }

    // MARK: Scheduling

    /// Tells the schedule what happened now, and arms the host's timer for its next deadline.
    func note(_ event: ReconcileSchedule.Event) {
        guard !isShutDown else { return }
        schedule.receive(event, at: host.uptime().monotonic)
        arm()
    }

    /// Arms the host's one timer for the schedule's next deadline, unless it is armed for it.
    private func arm() {
        guard !isShutDown else { return }
        let next = schedule.nextDeadline
        if let armed, armed.at == next { return }
        armed?.timer.cancel()
        timersArmed &+= 1
        let id = timersArmed
        armed = (id, next, host.schedule(at: next) { [weak self] in await self?.fire(id) })
    }

    /// The timer `id` fell due: runs what the schedule says is due, in time order, then arms
    /// the timer for what comes next. (The deadline counts as reached even if the host's
    /// clock reads a little earlier: the timer slept on the configuration's clock.)
    private func fire(_ id: UInt64) {
        guard let fired = armed, fired.id == id else { return }
        armed = nil
        let now = max(fired.at, host.uptime().monotonic)
        while !isShutDown, let action = schedule.due(at: now) {
            switch action {
            case .reconcile(let trigger): reconcile(trigger)
            case .tick: tick()
            }
        }
        arm()
    }

    /// The periodic tick: detects a system sleep, then reconciles.
    private func tick() {
        guard !isShutDown else { return }
        let now = host.uptime()
        let slept = now.sleptSince(lastUptime)
        lastUptime = now
        if slept > .seconds(1) {
            logger.debug("the system slept for about \(slept); reconciling")
            _ = registry.apply(.sleep)
            _ = registry.apply(.wake)
            tap(.sleep)
            tap(.wake)
            reconcile(.wake)
        } else {
            reconcile(.periodic)
        }
    }

    /// Compares the registry with a fresh sysfs scan, evicting ghosts and admitting what the
    /// registry lacks, and notifies subscribers. Routine looks let entries the scan lacks
    /// wait for their LEFT events (`HotplugPolicy.judge(_:truth:at:patient:scope:)`); a scan
    /// that fails changes nothing.
    @discardableResult
    func reconcile(_ trigger: ReconcileTrigger) -> Reconciler.Report {
        // What to read and how patiently to judge: see ReconcilePlan.
        let plan = ReconcilePlan(
            trigger: trigger, touchedPorts: schedule.touchedPorts, needsFullScan: schedule.needsFullScan,
            isHotplugAvailable: isHotplugAvailable, isMonitorTapped: fanOut.isTapped)
        schedule.reconcileBegan(readingEverything: plan.look == .everything)
        var scan: SysfsScanner.Result
        switch plan.look {
        case .everything:
            scan = host.scan()
        case .ports(let ports):
            scan = SysfsScanner.Result(devices: ports.compactMap(host.device(named:)))
        }
        if let failure = scan.failure {
            // An unreadable sysfs is not an empty bus: evict nothing, look again later.
            logger.warning("reconcile (\(trigger.rawValue)) skipped: \(failure)")
            return .none
        }
        if trigger == .initial, let note = scan.note { logger.notice("\(note)") }
        let now = host.uptime().monotonic
        scan.devices = policy.withoutGone(scan.devices, at: now, descriptor: \.descriptor)
        let truth = scan.devices.map(\.descriptor)
        let scope = plan.scope(truth: truth, in: registry)
        var infos: [AccessoryDescriptor: USBDeviceInfo] = [:]
        for info in scan.devices { infos[info.descriptor] = info }
        let judgement = policy.judge(registry, truth: truth, at: now, patient: plan.isPatient, scope: scope)
        registry.now = recordedTime ?? now
        var report = Reconciler().reconcile(
            &registry, against: HotplugPolicy.truth(truth, keeping: judgement.waiting, of: registry),
            isShown: { d in infos[d].map(isVisible) ?? true }, scope: scope)
        if fanOut.isTapped { tap(.snapshot(scan.devices.filter(isVisible).map(\.descriptor))) }
        // Say what was seen: a session's operation found the device gone.
        report.events = report.events.map { event in
            if case .disconnected(let a, .ghostEvicted(.absentFromSnapshot)) = event, let operation = judgement.evict[a.connectionID] ?? nil {
                return .disconnected(a, .ghostEvicted(.noDevice(operation: operation)))
            }
            return event
        }
        report.events = deliver(report.events, infos: infos)
        // Entries that were kept: take the scan's fresher view (strings, configuration). A
        // hidden one that now speaks a supported protocol (its interfaces were not there
        // yet when it arrived) is shown from now on, under its first shown ID.
        for (accessory, var fresh) in ReconcilePlan.refreshes(in: registry, scope: scope, scan: scan.devices, descriptor: \.descriptor) {
            guard var entry = entries[accessory.connectionID], fresh != entry.info else { continue }
            fresh.descriptor = accessory.descriptor
            if !entry.visible, isVisible(fresh), let shown = registry.promote(accessory.connectionID) {
                entries[accessory.connectionID] = nil
                fresh.descriptor = shown.descriptor
                report.events += deliver([.connected(shown)], infos: [shown.descriptor: fresh])
                continue
            }
            entry.info = fresh
            entries[accessory.connectionID] = entry
        }
        for (id, operation) in judgement.falseAlarms { falseAlarm(id, operation: operation) }
        if let at = judgement.lookAgainAt { note(.confirm(at: at)) }
        if !report.events.isEmpty || trigger != .periodic {
            logger.debug("reconcile (\(trigger.rawValue)): kept \(report.kept), evicted \(report.evicted), admitted \(report.admitted)")
        }
        return report
    }

    /// A NO_DEVICE that sysfs has not confirmed for the whole wait: the connection stays, and
    /// the sessions that saw it end with an I/O error that says so.
    private func falseAlarm(_ id: ConnectionID, operation: String) {
        let device = registry[id].map { "bus \($0.descriptor.bus) address \($0.descriptor.address.map(String.init) ?? "?")" } ?? "the device"
        logger.warning(
            "\(operation) on connection \(id) reported the device gone, but sysfs still lists it (\(device)); keeping the connection. Is its device node missing (a container given a stale --device)?")
        suspectPipes.falseAlarm(id, device: device)
    }
}
