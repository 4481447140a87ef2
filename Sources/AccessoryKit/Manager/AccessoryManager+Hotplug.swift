import AccessoryCore

/// Hotplug intake: each notice, judged against sysfs's view of its port, becomes an event
/// for the registry; the ports it names are the next debounced reconcile's to read.
extension AccessoryManager {
    func handle(_ notices: [HotplugNotice]) {
        for notice in notices { handle(notice) }
    }

    private func handle(_ notice: HotplugNotice) {
        guard !isShutDown else { return }
        let device = notice.descriptor
        // The next debounced reconcile reads this port. (Should libusb's chain be short, a
        // parent hub missing from its list, the periodic full scan finds the rest.)
        var touched = [device.port]
        let address = device.address.map(String.init) ?? "?"
        switch notice.kind {
        case .arrived:
            let (info, superseded, fromSysfs) = arrivalInfo(notice)
            logger.trace("hotplug: arrived \(info.descriptor.port) bus \(device.bus) address \(address)")
            guard !superseded else {
                // A late event from a backlog (a storm): a newer instance holds the port in
                // sysfs, so this one is gone and its LEFT follows. Applying the add would
                // evict the live instance as replaced. The recording still gets it.
                logger.debug("hotplug: arrival of \(info.descriptor.port) address \(address) is stale; a newer instance holds the port")
                policy.skipped(device)
                if isVisible(info) { tap(.added(info.descriptor)) }
                break
            }
            policy.arrived(info.descriptor)
            // A serial the device has (its descriptor names one) but that sysfs could not
            // give yet: hold the announcement until the next reconcile reads sysfs again,
            // so that its identity is its serial and not its port (storms).
            let serialPending = !fromSysfs && info.descriptor.serial == nil
                && (info.deviceDescriptor?.serialNumberIndex ?? 0) != 0
            if serialPending { logger.debug("hotplug: \(info.descriptor.port) address \(address) arrived without its serial; announcing it once sysfs has it") }
            apply(.added(info.descriptor), arrival: info, shown: !serialPending)
        case .left:
            logger.trace("hotplug: left \(device.port) bus \(device.bus) address \(address)")
            let leaving = device.key.flatMap { registry.accessory(at: $0) }
            if let leaving { touched.append(leaving.descriptor.port) }
            var port: String? = device.port
            // libusb builds the port chain from its own parent links, which can be shorter
            // than the kernel's name when a parent hub is missing from its list. When the
            // entry at this address is the same device, match on the address alone.
            if !notice.portIsExact, let leaving, leaving.descriptor.vendor == device.vendor, leaving.descriptor.product == device.product {
                port = nil
            }
            let removal = notice.removal ?? DeviceRemoval(bus: device.bus, address: device.address, port: port)
            if leaving == nil, policy.isLeftOfSkippedArrival(device) {
                // The registry never held it: nothing to remove, no tombstone (which would
                // drop the next instance given this address) and nothing to suspect (in a
                // farm's storm, a full scan each). The recording still gets it.
                tap(.removed(removal))
            } else {
                apply(.removed(removal))
            }
            if let leaving, registry[leaving.connectionID] == nil { policy.markGone(leaving.descriptor, at: host.uptime().monotonic) }
        }
        note(.hotplug(ports: touched))
    }

    /// What is known about an arrival: sysfs's view when sysfs still holds that instance,
    /// else what the notice says; and whether sysfs shows a newer instance on its port (sysfs
    /// changes before the kernel sends the event, so it is never older than an event).
    private func arrivalInfo(_ notice: HotplugNotice) -> (info: USBDeviceInfo, superseded: Bool, fromSysfs: Bool) {
        let device = notice.descriptor
        // One directory, not a full scan: in a storm the device is often gone already, and
        // the debounced reconcile that follows catches up anyway.
        let live = host.device(named: device.port)
        let verdict = HotplugPolicy.judge(arrival: device, livePort: live?.descriptor)
        if verdict == .live, let live { return (live, false, true) }
        let superseded = verdict == .stale
        var info = USBDeviceInfo(
            descriptor: device, deviceClass: notice.record?.device.deviceClass ?? 0,
            deviceDescriptor: notice.record?.device, configuration: notice.record?.configuration, speed: notice.record?.speed)
        if notice.record != nil { info.descriptor.protocols = configuration.protocolTable.protocols(for: info) }
        return (info, superseded, false)
    }

}
