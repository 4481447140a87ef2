import AccessoryCore
import AccessoryKit

/// A simulated USB system, in process, on a virtual clock: the OS truth and the hotplug
/// source of the managers started on it with `AccessoryManager.init(configuration:usb:)`
/// or ``withAccessoryManager(configuration:usb:isolation:_:)``.
///
/// Hotplug is delivered as the kernel would, but deterministically: ``plug(_:port:)``,
/// ``unplug(_:silently:leftEventDelay:)`` and ``replug(_:silently:)`` return once every manager on the
/// simulation has handled their events. Time moves only with ``advance(by:)``, which runs
/// everything that falls due (debounced and periodic reconciles, confirmations, sleeps on
/// ``clock``) in time order, and ``sleep(for:)``, which the managers see as a system sleep.
public actor SimulatedUSB {
    let system = SimulatedSystem()

    /// An empty system with one bus.
    public init() {
        let system = self.system
        system.setModeSwitchHandler { [weak self] instance in
            // Counted from START on, so that the simulation waits for the phone to be back.
            system.begin(.modeSwitch)
            Task {
                await self?.switchToAccessoryMode(instance: instance)
                system.end(.modeSwitch)
            }
        }
    }

    deinit {
        system.end()
    }

    /// How many device opens the managers on this simulation have tried, for tests.
    package nonisolated var openAttempts: Int { system.openAttempts.load(ordering: .relaxed) }

    /// The Android Open Accessory strings (indices 0–5, `nil` for one never sent) that
    /// `device`, an ``SimulatedAccessory/androidPhone(serial:product:responder:)`` or the
    /// accessory-mode instance it became, received; `[]` when it is not there.
    public func accessoryStrings(of device: SimulatedDevice) -> [String?] {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address else { return [] }
        return system.androidStrings(instance: present.instance)
    }

    /// A phone got START: it leaves (with its removal event) and comes back on the same
    /// port at the next address in accessory mode, holding the strings it received.
    private func switchToAccessoryMode(instance: UInt64) async {
        guard let phone = system.devices.first(where: { $0.instance == instance }), let accessory = phone.accessory else { return }
        let port = phone.info.descriptor.port
        system.endConnections(instance: instance, inStatus: .error)
        await settle(includingSwitches: false)
        guard let gone = system.detach(port: port), gone.instance == instance else { return }
        await deliver(HotplugNotice(kind: .left, descriptor: gone.info.descriptor))
        let fresh = system.attach(accessory.inAccessoryMode, port: port)
        system.copyAndroidStrings(from: instance, to: fresh.instance)
        await deliver(HotplugNotice(kind: .arrived, descriptor: fresh.info.descriptor))
    }

    /// The virtual clock. Managers on this simulation use it; so may the test.
    public nonisolated var clock: SimulatedClock { SimulatedClock(system: system) }

    /// The OS truth now: the devices attached, in the order they were attached.
    public var devices: [SimulatedDevice] {
        system.devices.compactMap { d in
            d.accessory.map { SimulatedDevice(bus: d.info.descriptor.bus, address: d.info.descriptor.address ?? 0, port: d.info.descriptor.port, accessory: $0) }
        }
    }

    /// Attaches `accessory` on `port` (or the next free root port, `1-1`, `1-2`, …) at the
    /// next free address, with a hotplug arrival.
    @discardableResult
    public func plug(_ accessory: SimulatedAccessory, port: String? = nil) async -> SimulatedDevice {
        let device = system.attach(accessory, port: port)
        await deliver(HotplugNotice(kind: .arrived, descriptor: device.info.descriptor))
        return Self.simulated(device, accessory)
    }

    /// Detaches `device` in the kernel's order: transfers in flight fail first (OUT with
    /// NO_DEVICE, IN with a transfer error, as ESHUTDOWN and EPROTO), then the device leaves
    /// the truth (sysfs), and the hotplug removal reaches the managers `leftEventDelay` later
    /// (udevd relays it; real systems take tens to hundreds of milliseconds). A nonzero delay
    /// moves the virtual clock on by that much, running what falls due meanwhile, as
    /// ``advance(by:)`` does. `silently` sends no hotplug event, as when the monitor loses it:
    /// the managers find out at their next reconcile that sees the truth. A negative delay
    /// counts as zero.
    public func unplug(_ device: SimulatedDevice, silently: Bool = false, leftEventDelay: Duration = .zero) async {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address else { return }
        system.endConnections(instance: present.instance, inStatus: .error)
        // Let the sessions see their failed transfers (and tell their managers) first.
        await settle()
        guard let gone = system.detach(port: device.port), gone.instance == present.instance else { return }
        if leftEventDelay > .zero { await advance(by: leftEventDelay) }
        guard !silently else { return }
        await deliver(HotplugNotice(kind: .left, descriptor: gone.info.descriptor))
    }

    /// Makes opening `device` fail with ACCESS (`denied`), as in the first moments after an
    /// arrival, before udevd has applied its rule; or lets it open again.
    public func denyAccess(to device: SimulatedDevice, _ denied: Bool = true) {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address else { return }
        system.setAccessDenied(instance: present.instance, denied)
    }

    /// Removes `device`'s device node while the truth (sysfs) still lists it, as in a
    /// container given a stale `--device`: transfers in flight end with NO_DEVICE and opening
    /// it fails with NO_DEVICE, yet the device is there. A manager must not evict it.
    public func removeDeviceNode(of device: SimulatedDevice) async {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address else { return }
        system.endConnections(instance: present.instance, inStatus: .noDevice, removingNode: true)
        await settle()
    }

    /// Re-enumerates `device`: the same accessory on the same port under the next address.
    /// `silently` loses both events, as in the eight-hours-asleep story.
    @discardableResult
    public func replug(_ device: SimulatedDevice, silently: Bool = false) async -> SimulatedDevice {
        await unplug(device, silently: silently)
        let fresh = system.attach(device.accessory, port: device.port)
        if !silently {
            await deliver(HotplugNotice(kind: .arrived, descriptor: fresh.info.descriptor))
        }
        return Self.simulated(fresh, device.accessory)
    }

    /// Wedges `device`: its transfers and control requests never complete (they time out, on
    /// ``clock``) until `curedBy`, or a harsher step, is done to it; earlier steps change
    /// nothing. A reset cures it in place; a reauthorization or a power cycle of its port
    /// cures it as it comes back at the next address, and one it does not cure comes back
    /// still wedged. `nil`, and `.command` (the simulation runs no command), mean never.
    public func wedge(_ device: SimulatedDevice, curedBy: RecoveryStep?) {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address else { return }
        system.wedge(instance: present.instance, curedBy: curedBy)
    }

    /// Makes `device` leave, in the kernel's order as ``unplug(_:silently:leftEventDelay:)``
    /// does, and come back (at the next address, with its arrival) only once its port is
    /// switched off and on again, when `backOn` is `.powerCycle`; any other step, like `nil`,
    /// never brings it back (one not enumerated cannot be reset or reauthorized).
    public func vanish(_ device: SimulatedDevice, backOn: RecoveryStep?) async {
        guard let present = system.device(named: device.port), present.info.descriptor.address == device.address,
            let accessory = present.accessory
        else { return }
        let wedged = system.wedge(of: present.instance)
        guard await system.dropInKernelOrder(instance: present.instance, port: device.port) != nil else { return }
        if backOn == .powerCycle {
            system.park(SimulatedSystem.Parked(accessory: accessory, wedge: wedged), on: device.port)
        } else {
            system.unpark(port: device.port)
        }
    }

    /// One line per port power change so far, `PORT off` or `PORT on` (`1-1 off`), in
    /// order. The simulation's ports switch one by one, as on a hub with per-port power.
    public var powerLog: [String] { system.powerLog }

    /// A hotplug event on its own, for ``send(_:for:)``.
    public enum Event: Sendable, Hashable {
        case arrival, removal
    }

    /// Delivers a hotplug event for `device` whatever the truth says now: a duplicated,
    /// late or reordered uevent, as a storm's backlog brings them. The truth is unchanged.
    public func send(_ event: Event, for device: SimulatedDevice) async {
        let descriptor = SimulatedSystem.info(device.accessory, bus: device.bus, address: device.address, port: device.port).descriptor
        await deliver(HotplugNotice(kind: event == .arrival ? .arrived : .left, descriptor: descriptor))
    }

    /// The system sleeps for `duration`: CLOCK_BOOTTIME moves on and CLOCK_MONOTONIC does
    /// not, so a manager finds the gap at its next periodic reconcile (``advance(by:)`` by
    /// the reconcile interval) and reconciles at once.
    ///
    /// A negative duration counts as zero; BOOTTIME stops at the simulation's end of time.
    public func sleep(for duration: Duration) async {
        let duration = Self.clamped(duration, from: system.uptime.boot)
        system.sleep(for: duration)
    }

    /// Moves the virtual clock on by `duration`, running everything that falls due on the
    /// way in time order: debounced, confirming and periodic reconciles of every manager on
    /// this simulation, and tasks sleeping on ``clock``.
    ///
    /// Tasks the test has just started (a read with a timeout, say) get to run first, so
    /// that their sleeps on the clock start from the time before the advance.
    ///
    /// A negative duration counts as zero (time never runs back); the clock stops at the
    /// simulation's end of time, `.seconds(Int64.max)`. Every periodic reconcile on the way
    /// runs, so an advance costs in proportion to `duration` over the reconcile interval.
    public func advance(by duration: Duration) async {
        let duration = Self.clamped(duration, from: system.now)
        await settle()
        let target = system.now + duration
        while let due = system.nextDeadline, due <= target {
            system.setNow(due)
            // The managers' timers run here, in deadline order; sleepers on the clock woke.
            for work in system.timers.takeDue(by: due) { await work() }
            // Let the tasks just woken from the clock run before time moves on.
            await settle()
        }
        system.setNow(target)
    }

    /// Waits (by yielding, never sleeping) until at least `count` tasks sleep on ``clock``,
    /// such as a session's read timeout the test has just started; `false` if they don't
    /// within a bounded number of turns. Advance time after this to be sure their deadlines
    /// count from now.
    @discardableResult
    public func waitForSleepers(_ count: Int = 1) async -> Bool {
        for _ in 0..<100_000 {
            if system.sleeperCount >= count { return true }
            await Task.yield()
        }
        return system.sleeperCount >= count
    }

    /// Returns once the simulation's own work has ended: the devices' event queues have
    /// completed what they can, the managers have heard of the transfers that found their
    /// device gone, and (with `includingSwitches`) phones that got START are back. Then it
    /// gives tasks the test has just started a few turns of the pool, which nothing counts.
    private func settle(includingSwitches: Bool = true) async {
        await system.settle(includingSwitches: includingSwitches)
    }

    /// How long, in real time, tasks may sleep on ``clock`` with nothing happening in the
    /// simulation before their sleeps fail with an error that says how to move the clock
    /// (8 s by default). For this package's tests, which need it shorter.
    package func setStallLimit(_ limit: Duration) {
        system.stallLimit = limit
    }

    /// The simulation's end of time: its clocks stop there, so that no arithmetic on them
    /// overflows (`Duration` holds about 1.7 × 10²⁰ seconds, its `components` 9.2 × 10¹⁸).
    static let endOfTime = Duration.seconds(Int64.max)

    /// `duration` as a step from `now`: at least zero, and no further than ``endOfTime``.
    static func clamped(_ duration: Duration, from now: Duration) -> Duration {
        min(max(duration, .zero), max(endOfTime - now, .zero))
    }

    // MARK: For managers and replays in this package

    func makeHost() -> SimulatedHost { SimulatedHost(system: system) }

    /// A trace's `add`: attaches exactly what it describes and delivers the arrival.
    func replayArrival(_ descriptor: AccessoryDescriptor, at time: Duration?) async {
        system.attach(descriptor)
        var notice = HotplugNotice(kind: .arrived, descriptor: descriptor)
        notice.recordedTime = time
        await deliver(notice)
    }

    /// A trace's `remove`: detaches what it names and delivers exactly that removal.
    func replayRemoval(_ removal: DeviceRemoval, at time: Duration?) async {
        let known = removal.address.flatMap { system.device(bus: removal.bus, address: $0) }?.info.descriptor
        system.detach(removal)
        var notice = HotplugNotice(
            kind: .left, descriptor: known ?? AccessoryDescriptor(bus: removal.bus, address: removal.address, port: removal.port ?? ""))
        notice.removal = removal
        notice.recordedTime = time
        await deliver(notice)
    }

    /// A trace's `snapshot`, `sleep`, `wake` or `overflow`, at its recorded time: a snapshot
    /// becomes the OS truth, and the managers take it as authoritative.
    func replaySystem(_ event: HotplugEvent, at time: Duration?) async {
        let kind: HotplugNotice.Kind
        switch event {
        case .snapshot(let devices):
            system.setTruth(devices)
            kind = .truth
        case .sleep: kind = .sleep
        case .wake: kind = .wake
        case .overflow: kind = .overflow
        case .added, .removed: return
        }
        await deliver(.system(kind, recordedTime: time))
    }

    /// Sends a notice to every manager on the simulation and returns once all have handled it.
    private func deliver(_ notice: HotplugNotice) async {
        await system.deliver(notice)
    }

    private static func simulated(_ d: SimulatedSystem.Device, _ accessory: SimulatedAccessory) -> SimulatedDevice {
        SimulatedDevice(bus: d.info.descriptor.bus, address: d.info.descriptor.address ?? 0, port: d.info.descriptor.port, accessory: accessory)
    }
}
