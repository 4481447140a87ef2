/// Hotplug notices: each, judged against the truth's view of its port, becomes an event for
/// the registry; the ports it names are the next debounced look's to read.
extension AccessoryTracker {
    /// A device arrived.
    ///
    /// - Parameters:
    ///   - device: what the notice says of it (libusb gives bus, address, port, IDs and its
    ///     cached descriptors).
    ///   - portNow: the truth's device on its port now, if the driver looked (one port, not a
    ///     scan). The truth changes before the kernel sends the event, so it is never older:
    ///     the same instance there gives its fuller view; a newer instance of the same VID:PID
    ///     makes this arrival stale (a backlog in a storm), and it is skipped. Of another
    ///     instance only bus, address and IDs are used, so a driver may read no more of it.
    ///   - now: when the notice came.
    public mutating func arrived(_ device: USBDeviceInfo, portNow: USBDeviceInfo?, at now: Duration) -> TrackerEffects {
        var effects = TrackerEffects()
        arrived(device, portNow: portNow, at: now, into: &effects)
        return effects
    }

    /// ``arrived(_:portNow:at:)``, appending its effects to `effects`. The notice is consumed:
    /// its device becomes the entry's without a copy.
    mutating func arrived(_ device: consuming USBDeviceInfo, portNow: USBDeviceInfo?, at now: Duration, into effects: inout TrackerEffects) {
        let verdict = HotplugPolicy.judge(arrival: device.descriptor, livePort: portNow?.descriptor)
        // Of the notice itself only its port and address are needed from here on.
        let noticePort = device.descriptor.port
        let noticeAddress = device.descriptor.address
        let fromTruth = verdict == .live
        var info: USBDeviceInfo
        if fromTruth { info = portNow! } else { info = consume device }
        resolveProtocols(&info)
        if verdict == .stale {
            // Applying the add would evict the live instance as replaced. Its LEFT follows;
            // the recording still gets it. (`info` is the notice here, protocols aside.)
            effects.notes.append(
                "hotplug: arrival of \(noticePort) address \(noticeAddress.map(String.init) ?? "?") is stale; a newer instance holds the port")
            policy.skipped(info.descriptor)
            if recordsNotices, isShown(info) { effects.recorded.append(.added(info.descriptor)) }
        } else {
            policy.arrived(info.descriptor)
            // A serial the device has (its descriptor names one) but that the truth could not
            // give yet: hold the announcement until the next look reads it, so that its
            // identity is its serial and not its port (storms).
            let serialPending = !fromTruth && info.descriptor.serial == nil && (info.deviceDescriptor?.serialNumberIndex ?? 0) != 0
            if serialPending {
                effects.notes.append(
                    "hotplug: \(noticePort) address \(noticeAddress.map(String.init) ?? "?") arrived without its serial; announcing it once the truth has it")
            }
            let visible = isShown(info)
            // Only a device that says more than its descriptor is kept in ``devices``.
            let kept: USBDeviceInfo? = info.isBareDescriptor ? nil : info
            add(info.descriptor, recorded: recordsNotices && visible, device: kept, shown: !serialPending && visible, at: now, into: &effects)
        }
        if !looksAreAuthoritative { schedule.touched(noticePort, at: now) }
    }

    /// An add as a trace records it: a descriptor only, with no look at its port. It does what
    /// ``arrived(_:portNow:at:into:)`` does with `USBDeviceInfo(descriptor: d)` and no
    /// `portNow` (an unconfirmed arrival, no serial pending, not a hub), without making the
    /// device: a bare device matches none of the built-in rules (they need its interfaces),
    /// so unless the application has rules of its own its protocols stay as they are.
    mutating func added(_ d: consuming AccessoryDescriptor, at now: Duration, into effects: inout TrackerEffects) {
        guard configuration.protocolTable.rules.isEmpty, ProtocolTable.builtInRulesNeedInterfaces else {
            arrived(USBDeviceInfo(descriptor: d), portNow: nil, at: now, into: &effects)
            return
        }
        policy.arrived(d)
        let visible = policy.isVisible(d, isHub: false)
        if !looksAreAuthoritative { schedule.touched(d.port, at: now) }
        add(d, recorded: recordsNotices && visible, device: nil, shown: visible, at: now, into: &effects)
    }

    /// A device left.
    ///
    /// - Parameters:
    ///   - device: what the notice says of it.
    ///   - portIsExact: whether `device.port` is the kernel's own port chain. libusb builds its
    ///     chain from its parent links, which can be shorter when a hub is missing from its
    ///     list; the entry at the notice's address is then matched by address alone when it
    ///     has the same IDs.
    ///   - now: when the notice came.
    public mutating func left(_ device: AccessoryDescriptor, portIsExact: Bool, at now: Duration) -> TrackerEffects {
        let leaving = device.key.flatMap { registry.accessory(at: $0) }
        var port: String? = device.port
        if !portIsExact, let leaving, leaving.descriptor.vendor == device.vendor, leaving.descriptor.product == device.product {
            port = nil
        }
        return left(DeviceRemoval(bus: device.bus, address: device.address, port: port), descriptor: device, at: now)
    }

    /// A removal as a trace records it (it may lack the port or the address).
    mutating func left(_ removal: DeviceRemoval, at now: Duration, into effects: inout TrackerEffects) {
        let key = removal.address.map { DeviceKey(bus: removal.bus, address: $0) }
        left(removal, key: key, port: removal.port ?? "", at: now, into: &effects)
    }

    /// A removal, exactly what to remove (a simulated host may know it better than the
    /// notice's descriptor says), of the device `device` the notice names.
    package mutating func left(_ removal: DeviceRemoval, descriptor device: AccessoryDescriptor, at now: Duration) -> TrackerEffects {
        var effects = TrackerEffects()
        left(removal, key: device.key, port: device.port, at: now, into: &effects)
        return effects
    }

    /// A removal of the device the notice names by `key` (its bus and address, if given) and
    /// `port` (empty if not given).
    private mutating func left(
        _ removal: DeviceRemoval, key: DeviceKey?, port: String, at now: Duration, into effects: inout TrackerEffects
    ) {
        let leaving = key.flatMap { registry.connectionID(at: $0) }
        policy.heardLeft(at: now)
        if !port.isEmpty, !looksAreAuthoritative { schedule.touched(port, at: now) }
        if recordsNotices { effects.recorded.append(.removed(removal)) }
        if leaving == nil, let key, policy.isLeftOfSkippedArrival(key) {
            // The registry never held it: nothing to remove, no tombstone (which would drop
            // the next instance given this address) and nothing to suspect (in a farm's storm,
            // a full scan each). The recording still gets it.
            return
        }
        registry.now = recordedTime ?? now
        let start = effects.events.count
        let suspicion = registry.applyRemoval(removal, into: &effects.events)
        if let leaving, !looksAreAuthoritative {
            if effects.events.count > start, effects.events[start].connectionID == leaving {
                // The removal took the entry that was there: that instance is gone, and the
                // truth may list it a moment longer. (Its disconnect, read where it lies.)
                let gone = effects.events[start].descriptor
                if gone.port != port { schedule.touched(gone.port, at: now) }
                policy.markGone(gone, at: now)
            } else if let stays = registry.port(of: leaving), stays != port {
                schedule.touched(stays, at: now)
            }
        }
        deliverAppended(from: start, into: &effects)
        if let suspicion { suspected(suspicion, at: now, into: &effects) }
    }

    /// Adds `d` to the registry, its notifications appended to `effects` in place (no array
    /// per event, and the descriptor handed over as it is). An add raises no suspicion.
    /// - Parameters:
    ///   - recorded: whether the recording gets the add (not for a device that is not shown).
    ///   - device: what the OS says of the device, when it says more than its descriptor:
    ///     kept in ``devices`` for the entry it connects.
    ///   - shown: whether the device is shown.
    private mutating func add(
        _ d: consuming AccessoryDescriptor, recorded: Bool, device: USBDeviceInfo?, shown: Bool, at now: Duration,
        into effects: inout TrackerEffects
    ) {
        if recorded { effects.recorded.append(.added(copy d)) }
        registry.now = recordedTime ?? now
        let start = effects.events.count
        registry.applyAddition(d, shown: shown, into: &effects.events)
        if let device { deliverAppended(from: start, device: device, into: &effects) } else { deliverAppended(from: start, into: &effects) }
    }

    /// The registry suspects it is out of step: reconcile after the debounce, reading
    /// everything.
    private mutating func suspected(_ suspicion: ConnectionRegistry.Suspicion, at now: Duration, into effects: inout TrackerEffects) {
        effects.notes.append("registry suspects it is out of step (\(suspicion)); reconciling")
        schedule.receive(.suspicion, at: now)
    }
}
