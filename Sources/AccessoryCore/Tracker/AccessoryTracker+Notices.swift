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

    /// ``arrived(_:portNow:at:)``, appending its effects to `effects`.
    mutating func arrived(_ device: USBDeviceInfo, portNow: USBDeviceInfo?, at now: Duration, into effects: inout TrackerEffects) {
        let notice = device.descriptor
        let verdict = HotplugPolicy.judge(arrival: notice, livePort: portNow?.descriptor)
        let fromTruth = verdict == .live
        let info = resolvingProtocols(fromTruth ? portNow! : device)
        let address = notice.address.map(String.init) ?? "?"
        if verdict == .stale {
            // Applying the add would evict the live instance as replaced. Its LEFT follows;
            // the recording still gets it.
            effects.notes.append("hotplug: arrival of \(notice.port) address \(address) is stale; a newer instance holds the port")
            policy.skipped(notice)
            if isShown(info) { effects.recorded.append(.added(info.descriptor)) }
        } else {
            policy.arrived(info.descriptor)
            // A serial the device has (its descriptor names one) but that the truth could not
            // give yet: hold the announcement until the next look reads it, so that its
            // identity is its serial and not its port (storms).
            let serialPending = !fromTruth && info.descriptor.serial == nil && (info.deviceDescriptor?.serialNumberIndex ?? 0) != 0
            if serialPending {
                effects.notes.append("hotplug: \(notice.port) address \(address) arrived without its serial; announcing it once the truth has it")
            }
            apply(.added(info.descriptor), device: info, shown: !serialPending && isShown(info), at: now, into: &effects)
        }
        schedule.touched(notice.port, at: now)
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
        let descriptor = AccessoryDescriptor(bus: removal.bus, address: removal.address, port: removal.port ?? "")
        left(removal, descriptor: descriptor, at: now, into: &effects)
    }

    /// A removal, exactly what to remove (a simulated host may know it better than the
    /// notice's descriptor says), of the device `device` the notice names.
    package mutating func left(_ removal: DeviceRemoval, descriptor device: AccessoryDescriptor, at now: Duration) -> TrackerEffects {
        var effects = TrackerEffects()
        left(removal, descriptor: device, at: now, into: &effects)
        return effects
    }

    private mutating func left(
        _ removal: DeviceRemoval, descriptor device: AccessoryDescriptor, at now: Duration, into effects: inout TrackerEffects
    ) {
        let leaving = device.key.flatMap { registry.accessory(at: $0) }
        policy.heardLeft(at: now)
        if leaving == nil, policy.isLeftOfSkippedArrival(device) {
            // The registry never held it: nothing to remove, no tombstone (which would drop
            // the next instance given this address) and nothing to suspect (in a farm's storm,
            // a full scan each). The recording still gets it.
            effects.recorded.append(.removed(removal))
        } else {
            apply(.removed(removal), device: nil, shown: true, at: now, into: &effects)
        }
        if let leaving, registry[leaving.connectionID] == nil { policy.markGone(leaving.descriptor, at: now) }
        if !device.port.isEmpty { schedule.touched(device.port, at: now) }
        if let leaving, leaving.descriptor.port != device.port { schedule.touched(leaving.descriptor.port, at: now) }
    }

    /// Applies an add or a removal to the registry. The recording gets it unless it adds a
    /// device that is not shown.
    private mutating func apply(
        _ event: HotplugEvent, device: USBDeviceInfo?, shown: Bool, at now: Duration, into effects: inout TrackerEffects
    ) {
        if device.map({ isShown($0) }) ?? true { effects.recorded.append(event) }  // not `map(isShown)`, which copies the whole tracker
        registry.now = recordedTime ?? now
        let update = registry.apply(event, isShown: { _ in shown })
        deliver(update.events, device: { d in device.flatMap { $0.descriptor == d ? $0 : nil } }, into: &effects)
        if let suspicion = update.suspicion {
            effects.notes.append("registry suspects it is out of step (\(suspicion)); reconciling")
            schedule.receive(.suspicion, at: now)
        }
    }
}
