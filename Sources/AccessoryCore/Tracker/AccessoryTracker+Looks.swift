/// Looks at the OS truth: when they fall due, what they read, and what a look's devices do
/// to the registry.
extension AccessoryTracker {
    /// The clock reached `now`: returns what is due, at most one look at a time (call again,
    /// after handing its devices back, until ``TrackerEffects/look`` is `nil`).
    ///
    /// The periodic tick compares `bootTime` (`CLOCK_BOOTTIME`, which runs while the system is
    /// suspended) with `now` (`CLOCK_MONOTONIC`, which stops): more than a second's difference
    /// since the last tick is a sleep, after which events may have been lost.
    public mutating func due(at now: Duration, bootTime: Duration? = nil) -> TrackerEffects {
        var effects = TrackerEffects()
        guard let action = schedule.due(at: now) else { return effects }
        switch action {
        case .reconcile(let trigger):
            effects.look = beginLook(trigger)
        case .tick:
            var slept = Duration.zero
            if let bootTime {
                if let last = lastTick { slept = (bootTime - last.boot) - (now - last.monotonic) }
                lastTick = (now, bootTime)
            }
            if slept > .seconds(1) {
                effects.notes.append("the system slept for about \(slept); reconciling")
                // The wake look that follows reads everything: no other look is asked for.
                _ = registry.apply(.sleep)
                _ = registry.apply(.wake)
                if recordsNotices { effects.recorded += [.sleep, .wake] }
                effects.look = beginLook(.wake)
            } else {
                effects.look = beginLook(.periodic)
            }
        }
        return effects
    }

    /// Begins a look for `trigger`: what to read (only the ports hotplug events named, for a
    /// debounced look with hotplug working and no recording; else everything) and how
    /// patiently to judge. Hand the devices read to ``scanned(_:for:at:noticesPending:)``.
    public mutating func beginLook(_ trigger: ReconcileTrigger) -> ReconcilePlan {
        let plan = ReconcilePlan(
            trigger: trigger, touchedPorts: schedule.touchedPorts, needsFullScan: schedule.needsFullScan,
            isHotplugAvailable: configuration.hasHotplug, isMonitorTapped: isRecording)
        schedule.reconcileBegan(readingEverything: plan.look == .everything)
        return plan
    }

    /// The devices a look read: evicts the ghosts among the entries the look speaks for,
    /// admits what the registry lacks, refreshes what it keeps, and asks to look again while
    /// entries wait for their LEFT events. Routine looks let an entry the truth lacks wait
    /// for its LEFT event; a `wake`, `initial`, `refresh` or `snapshot` look does not.
    /// - Parameters:
    ///   - truth: every device the look found, hubs included. (A look that could not read is
    ///     no empty bus: then call nothing.)
    ///   - plan: the look, as ``beginLook(_:)`` or ``TrackerEffects/look`` gave it.
    ///   - now: when the look was made.
    ///   - noticesPending: whether the host holds hotplug notices it has not yet handed in
    ///     (a busy process takes them late). Any of them may be a LEFT event an entry waits
    ///     for, so no wait ends while they do.
    public mutating func scanned(
        _ truth: [USBDeviceInfo], for plan: ReconcilePlan, at now: Duration, noticesPending: Bool = false
    ) -> TrackerEffects {
        var effects = TrackerEffects()
        var resolved = truth
        // Without rules of the application's own, a device with no configuration gets no
        // protocol: then the truth is taken as it is (not copied to be resolved in place).
        let tableAddsNothing = configuration.protocolTable.rules.isEmpty && ProtocolTable.builtInRulesNeedInterfaces
        if !tableAddsNothing || truth.contains(where: { $0.configuration != nil }) {
            for i in resolved.indices { resolveProtocols(&resolved[i]) }  // not `map(resolvingProtocols)`, which copies the tracker
        }
        let found = policy.withoutGone(resolved, at: now, descriptor: \USBDeviceInfo.descriptor)
        let descriptors = found.map(\.descriptor)
        let scope = plan.scope(truth: descriptors, in: registry)
        let judgement = policy.judge(
            registry, truth: descriptors, at: now, patient: plan.isPatient, scope: scope, noticesPending: noticesPending)
        // A look that says no more of any device than its descriptor (a trace's snapshot) and
        // keeps no entry waiting needs no map from descriptor to device: then every device the
        // reconcile may admit is one of `found`, shown by its descriptor alone (none is a
        // hub), and none is kept in ``devices``.
        let bare = found.allSatisfy(\.isBareDescriptor)
        let indexed = !bare || !judgement.waiting.isEmpty
        var infos: [AccessoryDescriptor: USBDeviceInfo] = [:]
        if indexed { for info in found { infos[info.descriptor] = info } }
        registry.now = recordedTime ?? now
        let policy = self.policy
        let report = Reconciler().reconcile(
            &registry, against: HotplugPolicy.truth(descriptors, keeping: judgement.waiting, of: registry),
            isShown: { d in
                indexed ? infos[d].map { policy.isVisible($0.descriptor, isHub: $0.isHub) } ?? true : policy.isVisible(d, isHub: false)
            }, scope: scope)
        if isRecording { effects.recorded.append(.snapshot(found.filter { isShown($0) }.map(\.descriptor))) }
        // An operation's NO_DEVICE found it gone first: the ghost's evidence names it.
        // (Only when some eviction has an operation: else the events are taken as they are.)
        let events = !judgement.evict.values.contains(where: { $0 != nil }) ? report.events : report.events.map { event in
            if case .disconnected(let a, .ghostEvicted(.absentFromSnapshot)) = event, let operation = judgement.evict[a.connectionID] ?? nil {
                return AccessoryEvent.disconnected(a, .ghostEvicted(.noDevice(operation: operation)))
            }
            return event
        }
        deliver(events, devices: infos, into: &effects)
        // Bare devices refresh nothing, unless a hidden entry may now be shown.
        if !bare || !devices.isEmpty || registry.hasHiddenEntries { refreshKept(scope: scope, found: found, into: &effects) }
        effects.kept = report.kept
        for (id, operation) in judgement.falseAlarms { effects.falseAlarms.append((id, operation)) }
        if let at = judgement.lookAgainAt { schedule.receive(.confirm(at: at), at: now) }
        if !effects.events.isEmpty || plan.trigger != .periodic {
            effects.notes.append(
                "reconcile (\(plan.trigger.rawValue)): kept \(report.kept), evicted \(report.evicted), admitted \(report.admitted)")
        }
        return effects
    }

    /// Entries a look kept take its fresher view (strings, configuration). A hidden one that
    /// now speaks a supported protocol (its interfaces were not there yet when it arrived) is
    /// shown from now on, under its first shown ID.
    private mutating func refreshKept(scope: Set<ConnectionID>?, found: [USBDeviceInfo], into effects: inout TrackerEffects) {
        for (accessory, var fresh) in ReconcilePlan.refreshes(in: registry, scope: scope, scan: found, descriptor: \USBDeviceInfo.descriptor) {
            let id = accessory.connectionID
            fresh.descriptor = accessory.descriptor  // the registry's, enriched by the look
            if id.isHidden, isShown(fresh), let shown = registry.promote(id) {
                devices[id] = nil
                fresh.descriptor = shown.descriptor
                deliver([.connected(shown)], devices: [shown.descriptor: fresh], into: &effects)
            } else if fresh.isBareDescriptor {
                if !devices.isEmpty { devices[id] = nil }
            } else if devices[id] != fresh {
                devices[id] = fresh
            }
        }
    }
}
