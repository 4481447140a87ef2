import AccessoryCore
import AccessoryKit

/// What the recovery ladder works on, as accessory-sim has it: wedged devices, ports whose
/// power switches one by one (with a log of each change), and devices that wait, off their
/// port, for its power to come back. A device dropped by a step leaves in the kernel's order
/// and comes back at the next address.
extension SimulatedSystem {
    /// A wedge: the device answers nothing until `curedBy`, or a harsher step, is done to it
    /// (`nil`: no step cures it). The simulation does no external command, so a wedge cured
    /// by `.command` stays.
    struct Wedge: Sendable {
        var curedBy: RecoveryStep?

        func isCured(by step: RecoveryStep) -> Bool {
            guard let curedBy, curedBy != .command else { return false }
            return step >= curedBy
        }
    }

    /// A device off its port until the port's power comes back on.
    struct Parked: Sendable {
        var accessory: SimulatedAccessory
        var wedge: Wedge?
    }

    // MARK: Wedges

    func wedge(instance: UInt64, curedBy: RecoveryStep?) {
        state.withLock { s in
            s.activity &+= 1
            s.wedges[instance] = Wedge(curedBy: curedBy)
        }
    }

    func isWedged(instance: UInt64) -> Bool {
        state.withLock { $0.wedges[instance] != nil }
    }

    func wedge(of instance: UInt64) -> Wedge? {
        state.withLock { $0.wedges[instance] }
    }

    /// `step`, done to the instance in place (a reset), cures its wedge if it is one that
    /// step cures.
    func cure(instance: UInt64, by step: RecoveryStep) {
        state.withLock { s in
            guard let wedge = s.wedges[instance], wedge.isCured(by: step) else { return }
            s.activity &+= 1
            s.wedges[instance] = nil
        }
    }

    // MARK: Port power

    var powerLog: [String] { state.withLock { $0.powerLog } }

    func isPowered(port: String) -> Bool {
        state.withLock { !$0.portsOff.contains(port) }
    }

    /// The ports with something on them, parked off them, or switched off.
    var portsInUse: Set<String> {
        state.withLock { s in Set(s.devices.map(\.info.descriptor.port)).union(s.parked.keys).union(s.portsOff) }
    }

    /// Switches `port` off: logged when it was on; what is on it is dropped in the kernel's
    /// order and parked, forgetting a wedge that a power cycle cures (as does what was parked
    /// there already).
    func powerOff(port: String) async {
        let changed = state.withLock { s in
            guard s.portsOff.insert(port).inserted else { return false }
            s.activity &+= 1
            s.powerLog.append("\(port) off")
            if let parked = s.parked[port], parked.wedge?.isCured(by: .powerCycle) == true { s.parked[port]?.wedge = nil }
            return true
        }
        guard changed, let present = device(named: port) else { return }
        let wedged = wedge(of: present.instance)
        // A device a trace describes has no accessory to bring back: it only leaves.
        guard await dropInKernelOrder(instance: present.instance, port: port) != nil, let accessory = present.accessory else { return }
        park(Parked(accessory: accessory, wedge: wedged?.isCured(by: .powerCycle) == true ? nil : wedged), on: port)
    }

    /// Switches `port` on: logged when it was off; what was parked there comes back at the
    /// next address, with its arrival.
    func powerOn(port: String) async {
        let back: Parked? = state.withLock { s in
            guard s.portsOff.remove(port) != nil else { return nil }
            s.activity &+= 1
            s.powerLog.append("\(port) on")
            guard !s.devices.contains(where: { $0.info.descriptor.port == port }) else { return nil }
            return s.parked.removeValue(forKey: port)
        }
        if let back { await arrive(back, on: port) }
    }

    /// Keeps `parked` off `port` until its power comes back on.
    func park(_ parked: Parked, on port: String) {
        state.withLock { s in s.parked[port] = parked }
    }

    /// Forgets what waits for `port`'s power.
    func unpark(port: String) {
        state.withLock { s in _ = s.parked.removeValue(forKey: port) }
    }

    /// `authorized` 0 then 1 on the device at `port`: it leaves in the kernel's order and
    /// comes back at the next address, forgetting a wedge that a reauthorization cures.
    /// - Returns: `false` when no device is there.
    func reauthorize(port: String) async -> Bool {
        guard let present = device(named: port), let accessory = present.accessory else { return false }
        let wedged = wedge(of: present.instance)
        guard await dropInKernelOrder(instance: present.instance, port: port) != nil else { return false }
        await arrive(Parked(accessory: accessory, wedge: wedged?.isCured(by: .reauthorize) == true ? nil : wedged), on: port)
        return true
    }

    // MARK: In the kernel's order

    /// Drops the instance at `port` as the kernel does: its transfers in flight fail first,
    /// then it leaves the truth, then the removal reaches the managers.
    /// - Returns: the device that left, or `nil` when it was not there.
    @discardableResult
    func dropInKernelOrder(instance: UInt64, port: String) async -> Device? {
        endConnections(instance: instance, inStatus: .error)
        // Let the sessions see their failed transfers (and tell their managers) first.
        await settle()
        guard device(named: port)?.instance == instance, let gone = detach(port: port) else { return nil }
        await deliver(HotplugNotice(kind: .left, descriptor: gone.info.descriptor))
        return gone
    }

    /// Attaches a parked device at `port` under the next address, still wedged if it was,
    /// and delivers its arrival.
    private func arrive(_ parked: Parked, on port: String) async {
        let fresh = attach(parked.accessory, port: port)
        if let wedge = parked.wedge { self.wedge(instance: fresh.instance, curedBy: wedge.curedBy) }
        await deliver(HotplugNotice(kind: .arrived, descriptor: fresh.info.descriptor))
    }

    /// Returns once the simulation's own work has ended (the devices' event queues, the news
    /// their completions posted to the managers, and with `includingSwitches` the phones that
    /// got START), then gives tasks just started a few turns of the pool.
    func settle(includingSwitches: Bool = true) async {
        repeat {
            await waitUntilIdle(includingSwitches: includingSwitches)
            await waitUntilHandled()
            for _ in 0..<64 { await Task.yield() }
        } while !isIdle(includingSwitches: includingSwitches) || !isHandled
    }

    /// Sends a notice to every manager on the simulation and returns once all have handled it.
    func deliver(_ notice: HotplugNotice) async {
        send(notice)
        await waitUntilHandled()
    }
}
