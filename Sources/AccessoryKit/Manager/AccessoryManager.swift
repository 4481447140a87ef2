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
    /// The configuration's logger, where the manager and its helpers log.
    let logger: Logger

    /// Every hotplug decision: the manager feeds it inputs and performs its effects.
    var tracker: AccessoryTracker
    /// Every subscriber: ``events(includingCurrent:)``, ``updates(includingCurrent:bufferLimit:)``,
    /// ``monitorEvents()``, and a replay's observer.
    package nonisolated let fanOut = SubscriberFanOut()
    /// The subscribers of ``recoveries()``.
    package nonisolated let recoveryWatchers = RecoveryWatchers()
    private(set) var isShutDown = false
    /// Open sessions and opens under way, by connection and protocol (see
    /// AccessoryManager+Sessions.swift): what closing each needs, and its handle weakly, so
    /// a dropped session is closed, not leaked.
    var sessions = SessionTable<SessionEntry>()
    /// The manager's inbox: the host's hotplug notices (or, on a host without hotplug, a
    /// queue of its own), and the news its sessions post from their transfers' completions.
    /// One task takes it, in order.
    nonisolated let inbox: HotplugNoticeQueue
    private var monitorTask: Task<Void, Never>?
    /// The one timer armed on the host, for the tracker's next deadline.
    private var armed: (id: UInt64, at: Duration, timer: HostTimer)?
    private var timersArmed: UInt64 = 0
    /// Sessions' data planes waiting for the verdict on a NO_DEVICE.
    private var suspectPipes = SuspectPipes()
    /// While a batch of notices is handled, the notifications it makes, sent to subscribers
    /// together at its end (one hand-off to each subscriber per batch).
    private var outbox: [AccessoryEvent]?
    /// Notices handed in to the tracker so far, against the inbox's count of those it took in.
    private var noticesHandled = 0
    /// Hotplug notices taken so far, by kind (for metrics).
    package private(set) var hotplugCounts = HotplugCounts()
    /// Automatic recovery (``Configuration/recovery``), and the ports being recovered,
    /// requested recoveries included.
    let automaticRecovery: AutomaticRecovery

    /// Starts watching: subscribes to hotplug, then reconciles a first sysfs snapshot, whose
    /// devices become the first `.connected` events.
    ///
    /// When libusb cannot start (for example on a machine without USB), the manager logs a
    /// notice and relies on its periodic sysfs reconcile alone.
    /// - Throws: ``AccessoryError`` when libusb starts but hotplug registration or the event
    ///   thread fails; `.invalidArgument` for a configuration duration out of its range
    ///   (`reconcileInterval` 1 ms...49.7 days, `debounce` 0...49.7 days, `hotplugBatching`
    ///   0...1 s).
    public init(configuration: Configuration = .init()) async throws(AccessoryError) {
        try configuration.validate()
        let host = SystemUSBHost(
            sysfsRoot: configuration.sysfsRoot, logger: configuration.logger,
            reconcileInterval: configuration.reconcileInterval, clock: configuration.clock,
            hotplugBatching: configuration.hotplugBatching)
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
        self.logger = configuration.logger
        self.libusbVersion = host.version
        self.automaticRecovery = AutomaticRecovery(policy: configuration.recovery)
        // Subscribe first, then take the snapshot: no attach can fall in between.
        let notices = try host.startMonitoring()
        self.isHotplugAvailable = notices != nil
        let inbox = notices ?? HotplugNoticeQueue()
        self.inbox = inbox
        let uptime = host.uptime()
        self.tracker = AccessoryTracker(
            configuration: .init(
                includeHubs: configuration.includeHubs, supportedProtocols: configuration.supportedProtocols,
                protocolTable: configuration.protocolTable, hasHotplug: notices != nil,
                reconcileInterval: configuration.reconcileInterval, debounce: configuration.debounce),
            at: uptime.monotonic, bootTime: uptime.boot)

        reconcile(.initial)
        logger.debug(
            "started: \(connectedAccessories.count) accessories, hotplug \(notices != nil ? "on" : "off"), libusb \(libusbVersion ?? "unavailable")")
        monitorTask = Task { [weak self] in
            // A batch is everything that queued while the last one was handled: in a
            // storm, one wake-up and one hop onto the actor for many notices.
            while true {
                let batch = await inbox.next()
                guard !batch.isEmpty, let self else { return }
                await self.take(batch)
            }
        }
        arm()
    }

    deinit {
        host.stopMonitoring()
        inbox.finish()
        monitorTask?.cancel()
        armed?.timer.cancel()
        fanOut.finish()
        recoveryWatchers.finish()
    }

    // MARK: Public API

    /// The accessories connected now, in connection-ID order.
    public var connectedAccessories: [Accessory] { tracker.accessories }

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
    public func refresh() async -> RefreshReport {
        guard !isShutDown else { return RefreshReport() }
        return reconcile(.refresh)
    }

    /// Everything the OS says about a connected accessory: class, speed, configuration.
    package func deviceInfo(for id: ConnectionID) -> USBDeviceInfo? {
        tracker.device(id)
    }

    /// Tells the manager that an operation on an accessory returned NO_DEVICE: the tracker
    /// judges it (``AccessoryTracker/noDevice(_:operation:at:)``).
    package func reportNoDevice(_ id: ConnectionID, operation: String) {
        guard !isShutDown, tracker.noDevice(id, operation: operation, at: host.uptime().monotonic) else { return }
        logger.debug("\(operation) on connection \(id) returned NO_DEVICE; confirming")
        arm()
    }

    /// A session's transfer found its device (maybe) gone. The manager ends `pipe` once it
    /// knows: with the connection's disconnect, or with an I/O error when sysfs still lists
    /// the accessory after the wait.
    func sessionSawDeviceGone(_ id: ConnectionID, _ sign: DeviceGoneSign, pipe: DataPlane, label: String) {
        guard !isShutDown, tracker.entry(id) != nil else {
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
        automaticRecovery.stop()
        // Sessions first: closing them needs the event thread to complete their transfers.
        await closeSessionsAtShutdown()
        host.stopMonitoring()
        inbox.finish()  // a queue of its own, on a host without hotplug
        (host as? CapturingHost)?.recorder.close()  // synced to disk; a failure stays in captureError
        perform(tracker.shutdown())
        fanOut.finish()  // observers too: they may hold what holds the manager
        recoveryWatchers.finish()
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

    // MARK: Performing the tracker's effects

    /// One batch of the inbox, in order: runs of notices handled together, news in between.
    private func take(_ batch: [HotplugNoticeQueue.Item]) async {
        var notices: [HotplugNotice] = []
        notices.reserveCapacity(batch.count)
        for item in batch {
            switch item {
            case .notice(let notice): notices.append(notice)
            case .news(let work):
                if !notices.isEmpty { handle(notices) }
                notices = []
                await work()
            }
        }
        if !notices.isEmpty { handle(notices) }
    }

    /// Hotplug intake: each notice, with sysfs's view of its port for an arrival.
    func handle(_ notices: [HotplugNotice]) {
        outbox = []
        defer {
            let events = outbox ?? []
            outbox = nil
            fanOut.send(contentsOf: events)
        }
        noticesHandled &+= notices.count
        for notice in notices where !isShutDown {
            let now = host.uptime().monotonic
            if let time = notice.recordedTime { tracker.recordedTime = time }
            hotplugCounts.count(notice.kind)
            switch notice.kind {
            case .arrived:
                // One device, not a full scan: in a storm the device is often gone already,
                // and the debounced reconcile that follows catches up anyway.
                perform(tracker.arrived(notice.device, portNow: host.arrival(notice), at: now))
            case .left:
                if let removal = notice.removal {
                    perform(tracker.left(removal, descriptor: notice.descriptor, at: now))
                } else {
                    perform(tracker.left(notice.descriptor, portIsExact: notice.portIsExact, at: now))
                }
            case .sleep: perform(tracker.apply(.sleep, at: now))
            case .wake: perform(tracker.apply(.wake, at: now))
            case .overflow: perform(tracker.apply(.overflow, at: now))
            case .truth: reconcile(.snapshot)
            }
        }
        arm()
    }

    /// Performs `effects`: sends the notifications, ends the sessions of every connection
    /// that ended, records, logs, and reads what the tracker asks to look at.
    @discardableResult
    func perform(_ effects: TrackerEffects) -> TrackerEffects {
        for note in effects.notes { logger.debug("\(note)") }
        for event in effects.recorded { fanOut.tap(event) }
        for event in effects.events {
            switch event {
            case .connected(let accessory):
                automaticRecovery.connected(accessory)
                logger.debug(
                    "connected \(accessory.connectionID): \(accessory.descriptor.vendorProduct) \(accessory.physicalIdentity) on \(accessory.descriptor.port) address \(accessory.descriptor.address.map(String.init) ?? "?")")
            case .disconnected(let accessory, let reason):
                endSessions(of: accessory.connectionID, reason: reason)
                suspectPipes.disconnected(accessory.connectionID, reason: reason)
                automaticRecovery.disconnected(accessory, reason: reason, at: host.uptime().monotonic)
                logger.debug("disconnected \(accessory.connectionID) (\(accessory.physicalIdentity)): \(reason)")
            }
        }
        if outbox != nil {
            outbox?.append(contentsOf: effects.events)
        } else {
            fanOut.send(contentsOf: effects.events)
        }
        if !effects.events.isEmpty, automaticRecovery.watchesVanished { automaticRecovery.arm(on: self) }
        for alarm in effects.falseAlarms { suspectPipes.falseAlarm(alarm.id, on: tracker.entry(alarm.id), operation: alarm.operation, logger: logger) }
        guard let look = effects.look else { return effects }
        var all = effects
        all.look = nil
        all.append(self.look(look))
        return all
    }

    /// Reads what `plan` says and hands it to the tracker; a scan that fails changes nothing.
    private func look(_ plan: ReconcilePlan) -> TrackerEffects {
        var scan: SysfsScanner.Result
        switch plan.look {
        case .everything:
            scan = host.scan()
        case .ports(let ports):
            scan = SysfsScanner.Result(devices: ports.compactMap(host.device(named:)))
        }
        if let failure = scan.failure {
            // An unreadable sysfs is not an empty bus: evict nothing, look again later.
            logger.warning("reconcile (\(plan.trigger.rawValue)) skipped: \(failure)")
            return TrackerEffects()
        }
        if plan.trigger == .initial, let note = scan.note { logger.notice("\(note)") }
        // Notices the inbox holds may be the LEFT events that entries the scan lacks wait for.
        let noticesPending = inbox.noticesReceived != noticesHandled
        return perform(tracker.scanned(scan.devices, for: plan, at: host.uptime().monotonic, noticesPending: noticesPending))
    }

    /// Reconciles now for `trigger` (a `.snapshot` takes the truth as authoritative), and
    /// arms the timer for what the tracker wants next.
    @discardableResult
    func reconcile(_ trigger: ReconcileTrigger) -> RefreshReport {
        tracker.isRecording = fanOut.isTapped
        let plan = trigger == .snapshot ? tracker.beginAuthoritativeLook() : tracker.beginLook(trigger)
        let report = RefreshReport(look(plan))
        arm()
        return report
    }

    // MARK: Scheduling

    /// Arms the host's one timer for the tracker's next deadline, unless it is armed for it.
    func arm() {
        guard !isShutDown else { return }
        let next = tracker.nextDeadline
        if let armed, armed.at == next { return }
        armed?.timer.cancel()
        timersArmed &+= 1
        let id = timersArmed
        armed = (id, next, host.schedule(at: next) { [weak self] in await self?.fire(id) })
    }

    /// The timer `id` fell due: performs what the tracker says is due, look by look, then
    /// arms the timer for what comes next. (The deadline counts as reached even if the host's
    /// clock reads a little earlier: the timer slept on the configuration's clock.)
    private func fire(_ id: UInt64) {
        guard let fired = armed, fired.id == id else { return }
        armed = nil
        while !isShutDown {
            tracker.isRecording = fanOut.isTapped
            let uptime = host.uptime()
            let effects = tracker.due(at: max(fired.at, uptime.monotonic), bootTime: uptime.boot)
            perform(effects)
            if effects.look == nil { break }
        }
        arm()
    }
}
