import AccessoryCore
import AccessoryKit
import Synchronization
import AccessoryLocking

/// What a ``SimulatedUSB`` and the hosts of the managers on it share: the OS truth, the
/// virtual clock and its sleepers, the hotplug subscribers with what each has yet to
/// handle, and the work the simulation has handed off and not yet seen end. One lock (`Locked`)
/// guards it all; continuations are resumed after it is released.
///
/// A watchdog ends waits that nothing can end: when nothing happens in the simulation for
/// ``stallLimit`` of real time, a replayed transfer that its recording cannot answer and
/// that someone awaits fails, or else tasks sleeping on the clock fail with an error that
/// says how to move it.
final class SimulatedSystem: Sendable {
    /// Work handed off that ``SimulatedUSB`` waits for before it moves on.
    enum Work: Sendable {
        /// A device's event queue completing transfers.
        case delivery
        /// A phone re-enumerating in accessory mode after START.
        case modeSwitch
    }

    /// One device of the OS truth: what sysfs would say, and the accessory behind it (none
    /// for a device that a replayed trace describes).
    struct Device: Sendable {
        var info: USBDeviceInfo
        var accessory: SimulatedAccessory?
        /// Bumped by every attach, so a session knows when its instance is gone.
        var instance: UInt64
    }

    struct Subscriber {
        var notices: HotplugNoticeQueue
        var pending: Int
    }

    struct Sleeper {
        var id: UInt64
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    struct State {
        var now: Duration = .zero
        var asleep: Duration = .zero
        var devices: [Device] = []
        var lastAddress: [Int: Int] = [:]
        var nextID: UInt64 = 1
        var subscribers: [UInt64: Subscriber] = [:]
        var handledWaiters: [CheckedContinuation<Void, Never>] = []
        var sleepers: [Sleeper] = []
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        /// Told when their device instance leaves the truth (open connections), with how IN
        /// transfers pending then end.
        var watchers: [UInt64: [@Sendable (TransferStatus) -> Void]] = [:]
        /// Instances whose device node is gone although sysfs lists them.
        var withoutNode: Set<UInt64> = []
        /// Instances whose device node this process may not open (udevd has not applied
        /// its rule yet).
        var denied: Set<UInt64> = []
        /// Claimed interfaces, by device instance.
        var claims: [UInt64: Set<UInt8>] = [:]
        /// The Android Open Accessory strings each phone instance holds (indices 0–5).
        var androidStrings: [UInt64: [String?]] = [:]
        /// Told when a phone instance receives START: the ``SimulatedUSB`` re-enumerates it.
        var onModeSwitch: (@Sendable (UInt64) -> Void)?
        /// Work handed off and not yet ended, by kind.
        var deliveries = 0
        var modeSwitches = 0
        /// Waiting for the work in flight to end (with or without mode switches).
        var workWaiters: [(includingSwitches: Bool, continuation: CheckedContinuation<Void, Never>)] = []
        /// Bumped by everything that happens in the simulation: the watchdog's sign of life.
        var activity: UInt64 = 0
        var watchdogRunning = false
        var stallLimit: Duration = .seconds(8)
        /// Devices' endpoints that have held replayed transfers their recording cannot
        /// answer, by identity; bumped `strandings` at each new one.
        var strandHolders: [ObjectIdentifier: WeakEndpoints] = [:]
        var strandings: UInt64 = 0
        /// Wedged instances: they answer nothing until the step that cures them.
        var wedges: [UInt64: Wedge] = [:]
        /// What waits for its port's power to come back, by port.
        var parked: [String: Parked] = [:]
        /// The ports switched off.
        var portsOff: Set<String> = []
        /// One line per port power change, `PORT off` or `PORT on`.
        var powerLog: [String] = []

        /// Removes the devices that match, and hands back the watchers of those instances.
        mutating func remove(where match: (Device) -> Bool) -> (removed: [Device], watchers: [@Sendable (TransferStatus) -> Void]) {
            let removed = devices.filter(match)
            guard !removed.isEmpty else { return ([], []) }
            devices.removeAll(where: match)
            var told: [@Sendable (TransferStatus) -> Void] = []
            for d in removed {
                told += watchers.removeValue(forKey: d.instance) ?? []
                claims[d.instance] = nil
                withoutNode.remove(d.instance)
                wedges[d.instance] = nil
            }
            return (removed, told)
        }
    }

    let state = Locked(State())
    /// Device opens tried by the managers' hosts, successful or not.
    let openAttempts = Atomic<Int>(0)
    /// The managers' timers (``SimulatedHost/schedule(at:_:)``), run by ``SimulatedUSB/advance(by:)``.
    let timers = VirtualTimers()

    // MARK: The clock

    var now: Duration { state.withLock { $0.now } }

    /// Both kernel clocks: MONOTONIC stops while the system sleeps, BOOTTIME does not.
    var uptime: SystemUptime { state.withLock { SystemUptime(monotonic: $0.now, boot: $0.now + $0.asleep) } }

    /// How many tasks sleep on the clock now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline of a timer or of a task sleeping on the clock, if any.
    var nextDeadline: Duration? {
        let sleeper = state.withLock { $0.sleepers.map(\.deadline).min() }
        guard let timer = timers.nextDeadline else { return sleeper }
        return min(sleeper ?? timer, timer)
    }

    /// Moves the clock to `time` (never back) and wakes the sleepers due by then.
    func setNow(_ time: Duration) {
        let due: [Sleeper] = state.withLock { s in
            s.activity &+= 1
            s.now = max(s.now, time)
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due.sorted(by: { $0.deadline < $1.deadline }) { sleeper.continuation.resume() }
    }

    /// Adds time asleep: BOOTTIME moves, MONOTONIC does not.
    func sleep(for duration: Duration) {
        state.withLock { $0.asleep += duration }
    }

    func sleep(until deadline: Duration) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { s in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= s.now { return .success(()) }
                    s.activity &+= 1
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    return nil
                }
                if let resume { c.resume(with: resume) } else { startWatchdog() }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { s in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelled.insert(id)
                    return nil
                }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The simulation's owner is gone, so nothing can move the clock again: every sleeper
    /// fails now with an error that says so (a sleeping task holds the clock, and so this
    /// system, which holds its continuation: without this they would keep each other), and
    /// the timers and the mode-switch handler are dropped.
    func end() {
        let (sleepers, now) = state.withLock { s in
            defer {
                s.sleepers.removeAll()
                s.onModeSwitch = nil  // it holds this system: a cycle otherwise
            }
            return (s.sleepers, s.now)
        }
        timers.removeAll()
        for sleeper in sleepers {
            sleeper.continuation.resume(throwing: AccessoryError(
                .timeout,
                "this call waits on the simulated clock until \(sleeper.deadline) (it is at \(now)), and the SimulatedUSB that "
                    + "owns the clock is gone: keep it while calls wait on its clock",
                operation: "simulated clock"))
        }
    }

    // MARK: Work in flight

    /// Counts work handed off, until ``end(_:)``.
    func begin(_ work: Work) {
        state.withLock { s in
            s.activity &+= 1
            switch work {
            case .delivery: s.deliveries += 1
            case .modeSwitch: s.modeSwitches += 1
            }
        }
    }

    func end(_ work: Work) {
        let waiters = state.withLock { s in
            s.activity &+= 1
            switch work {
            case .delivery: s.deliveries -= 1
            case .modeSwitch: s.modeSwitches -= 1
            }
            return Self.takeWorkWaiters(&s)
        }
        for w in waiters { w.resume() }
    }

    /// Whether no work is in flight (mode switches aside, unless `includingSwitches`).
    func isIdle(includingSwitches: Bool) -> Bool {
        state.withLock { s in s.deliveries == 0 && (!includingSwitches || s.modeSwitches == 0) }
    }

    /// Returns once no work is in flight (mode switches aside, unless `includingSwitches`).
    func waitUntilIdle(includingSwitches: Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s in
                if s.deliveries == 0 && (!includingSwitches || s.modeSwitches == 0) { return true }
                s.workWaiters.append((includingSwitches, c))
                return false
            }
            if idle { c.resume() }
        }
    }

    private static func takeWorkWaiters(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        guard s.deliveries == 0 else { return [] }
        let switching = s.modeSwitches > 0
        var done: [CheckedContinuation<Void, Never>] = []
        s.workWaiters.removeAll { w in
            guard !w.includingSwitches || !switching else { return false }
            done.append(w.continuation)
            return true
        }
        return done
    }

    // MARK: The OS truth

    var devices: [Device] { state.withLock { $0.devices } }

    func device(named port: String) -> Device? {
        state.withLock { s in s.devices.first { $0.info.descriptor.port == port } }
    }

    func device(bus: Int, address: Int) -> Device? {
        state.withLock { s in s.devices.first { $0.info.descriptor.bus == bus && $0.info.descriptor.address == address } }
    }

    /// Attaches an accessory at `port` (or the next free root port) under the next free
    /// address of the bus, as the kernel hands them out (wrapping after 127).
    func attach(_ accessory: SimulatedAccessory, port: String?) -> Device {
        let (device, watchers) = state.withLock { s in
            let bus = 1
            let port = port ?? Self.freePort(bus: bus, taken: Set(s.devices.map(\.info.descriptor.port)))
            let (_, watchers) = s.remove { $0.info.descriptor.port == port }
            let address = Self.freeAddress(after: s.lastAddress[bus] ?? 1, taken: Set(s.devices.compactMap(\.info.descriptor.address)))
            s.lastAddress[bus] = address
            defer { s.nextID += 1 }
            let device = Device(info: Self.info(accessory, bus: bus, address: address, port: port), accessory: accessory, instance: s.nextID)
            s.devices.append(device)
            return (device, watchers)
        }
        for w in watchers { w(.noDevice) }
        return device
    }

    /// Attaches a device a trace describes, exactly as described, replacing whatever held its
    /// port.
    func attach(_ descriptor: AccessoryDescriptor) {
        let watchers = state.withLock { s in
            let (_, watchers) = s.remove { $0.info.descriptor.port == descriptor.port && $0.info.descriptor.bus == descriptor.bus }
            defer { s.nextID += 1 }
            s.devices.append(Device(info: USBDeviceInfo(descriptor: descriptor, deviceClass: 0), accessory: nil, instance: s.nextID))
            return watchers
        }
        for w in watchers { w(.noDevice) }
    }

    /// Detaches the device at `port`; returns it.
    @discardableResult
    func detach(port: String) -> Device? {
        let (removed, watchers) = state.withLock { s in s.remove { $0.info.descriptor.port == port } }
        for w in watchers { w(.noDevice) }
        return removed.first
    }

    /// Detaches what a trace's removal names: by bus and address when it has one, else by
    /// bus and port.
    func detach(_ removal: DeviceRemoval) {
        let (_, watchers) = state.withLock { s in
            s.remove { d in
                let x = d.info.descriptor
                guard x.bus == removal.bus else { return false }
                if let address = removal.address { return x.address == address }
                return x.port == removal.port
            }
        }
        for w in watchers { w(.noDevice) }
    }

    /// Replaces the whole truth with a trace's snapshot.
    func setTruth(_ descriptors: [AccessoryDescriptor]) {
        let watchers = state.withLock { s in
            let (_, watchers) = s.remove { _ in true }
            s.devices = descriptors.map { d in
                defer { s.nextID += 1 }
                return Device(info: USBDeviceInfo(descriptor: d, deviceClass: 0), accessory: nil, instance: s.nextID)
            }
            return watchers
        }
        for w in watchers { w(.noDevice) }
    }

    // MARK: Open connections

    /// Ends the open connections of an instance that stays in the truth for now: the first
    /// step of the kernel's unplug (their pending IN transfers end with `inStatus`), or its
    /// device node going away (then later opens fail too).
    func endConnections(instance: UInt64, inStatus: TransferStatus, removingNode: Bool = false) {
        let watchers = state.withLock { s in
            s.activity &+= 1
            if removingNode { s.withoutNode.insert(instance) }
            return s.watchers.removeValue(forKey: instance) ?? []
        }
        for w in watchers { w(inStatus) }
    }

    /// Makes opening an instance fail with ACCESS, or stops doing so.
    func setAccessDenied(instance: UInt64, _ denied: Bool) {
        state.withLock { s in if denied { s.denied.insert(instance) } else { s.denied.remove(instance) } }
    }

    func isAccessDenied(instance: UInt64) -> Bool {
        state.withLock { $0.denied.contains(instance) }
    }

    /// Whether the instance's device node is there (it is, unless ``endConnections(instance:inStatus:removingNode:)`` took it).
    func hasNode(instance: UInt64) -> Bool {
        state.withLock { !$0.withoutNode.contains(instance) }
    }

    /// Registers `gone` to be called once the instance leaves the truth; `false` when it is
    /// not there now or has no device node.
    func watch(instance: UInt64, _ gone: @escaping @Sendable (TransferStatus) -> Void) -> Bool {
        state.withLock { s in
            guard s.devices.contains(where: { $0.instance == instance }), !s.withoutNode.contains(instance) else { return false }
            s.watchers[instance, default: []].append(gone)
            return true
        }
    }

    /// Claims an interface of an instance; `false` when another connection holds it.
    func claim(instance: UInt64, interface: UInt8) -> Bool {
        state.withLock { s in s.claims[instance, default: []].insert(interface).inserted }
    }

    func release(instance: UInt64, interface: UInt8) {
        state.withLock { s in _ = s.claims[instance]?.remove(interface) }
    }


    static func freePort(bus: Int, taken: Set<String>) -> String {
        var n = 1
        while taken.contains("\(bus)-\(n)") { n += 1 }
        return "\(bus)-\(n)"
    }

    static func freeAddress(after last: Int, taken: Set<Int>) -> Int {
        var candidate = last
        for _ in 0..<127 {
            candidate = candidate >= 127 ? 2 : candidate + 1
            if !taken.contains(candidate) { return candidate }
        }
        return candidate
    }

    /// What sysfs would say of a simulated accessory: one vendor-specific interface per
    /// protocol, named by it, with the endpoints and alternate settings of its
    /// ``SimulatedInterface``; a replayed device's recorded descriptors.
    static func info(_ a: SimulatedAccessory, bus: Int, address: Int, port: String) -> USBDeviceInfo {
        let descriptor = AccessoryDescriptor(
            bus: bus, address: address, port: port, vendor: a.vendor, product: a.product, bcdDevice: a.bcdDevice,
            serial: a.serial, manufacturer: a.manufacturer, name: a.name, protocols: a.protocols.filter { !$0.isEmpty })
        if let recorded = a.recorded {
            return USBDeviceInfo(
                descriptor: descriptor, deviceClass: recorded.device.deviceClass, deviceDescriptor: recorded.device,
                configuration: recorded.configuration, speed: .high)
        }
        let interfaces = a.interfaces.enumerated().flatMap { i, interface in interface.descriptors(number: i) }
        return USBDeviceInfo(
            descriptor: descriptor, deviceClass: 0,
            deviceDescriptor: USBDeviceDescriptor(
                bcdUSB: 0x0200, deviceClass: 0, deviceSubclass: 0, deviceProtocol: 0, maxPacketSize0: 64, vendor: a.vendor,
                product: a.product, bcdDevice: a.bcdDevice, manufacturerIndex: a.manufacturer == nil ? 0 : 1,
                productIndex: a.name == nil ? 0 : 2, serialNumberIndex: a.serial == nil ? 0 : 3, configurationCount: 1),
            configuration: USBConfiguration(
                value: 1, attributes: 0x80, maxPower: 50, declaredInterfaceCount: UInt8(a.interfaces.count), interfaces: interfaces),
            speed: .high)
    }

    // MARK: Hotplug

    /// A new subscriber's notices.
    func subscribe() -> (id: UInt64, notices: HotplugNoticeQueue) {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        // The manager comes back for more once it has handled a batch; news its sessions post
        // (a NO_DEVICE seen by a transfer) is counted from the moment it is posted.
        let notices = HotplugNoticeQueue(
            onPosted: { [weak self] in self?.posted(to: id) }, onHandled: { [weak self] count in self?.handled(by: id, count: count) })
        state.withLock { s in s.subscribers[id] = Subscriber(notices: notices, pending: 0) }
        return (id, notices)
    }

    func unsubscribe(_ id: UInt64) {
        let (subscriber, waiters) = state.withLock { s in (s.subscribers.removeValue(forKey: id), Self.takeWaitersIfIdle(&s)) }
        subscriber?.notices.finish()
        for w in waiters { w.resume() }
    }

    /// Sends a notice to every subscriber.
    func send(_ notice: HotplugNotice) {
        state.withLock { s in
            s.activity &+= 1
            for id in s.subscribers.keys {
                s.subscribers[id]!.pending += 1
                s.subscribers[id]!.notices.yield(notice)
            }
        }
    }

    /// News was posted to subscriber `id`'s inbox: it is pending until handled.
    func posted(to id: UInt64) {
        state.withLock { s in
            s.activity &+= 1
            s.subscribers[id]?.pending += 1
        }
    }

    func handled(by id: UInt64, count: Int) {
        let waiters = state.withLock { s in
            s.activity &+= 1
            if let p = s.subscribers[id]?.pending, p > 0 { s.subscribers[id]!.pending = max(p - count, 0) }
            return Self.takeWaitersIfIdle(&s)
        }
        for w in waiters { w.resume() }
    }

    /// Whether every subscriber has handled every notice sent and all news posted so far.
    var isHandled: Bool { state.withLock { s in s.subscribers.values.allSatisfy { $0.pending == 0 } } }

    /// Returns once every subscriber has handled every notice sent (and all news posted) so far.
    func waitUntilHandled() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s in
                if s.subscribers.values.allSatisfy({ $0.pending == 0 }) { return true }
                s.handledWaiters.append(c)
                return false
            }
            if idle { c.resume() }
        }
    }

    private static func takeWaitersIfIdle(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        guard s.subscribers.values.allSatisfy({ $0.pending == 0 }) else { return [] }
        defer { s.handledWaiters.removeAll() }
        return s.handledWaiters
    }
}
