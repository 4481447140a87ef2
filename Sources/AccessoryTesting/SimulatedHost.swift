import AccessoryCore
import AccessoryKit
import Synchronization
import AccessoryLocking

/// The host one manager on a ``SimulatedUSB`` sees: the simulation's OS truth and clock, and
/// a hotplug subscription of its own. The manager's timers are the simulation's
/// (``SimulatedSystem/timers``): they run when ``SimulatedUSB/advance(by:)`` gets there.
final class SimulatedHost: USBHost {
    let system: SimulatedSystem
    private let subscription = Locked<UInt64?>(nil)

    init(system: SimulatedSystem) {
        self.system = system
    }

    func scan() -> SysfsScanner.Result {
        SysfsScanner.Result(devices: system.devices.map(\.info))
    }

    func device(named port: String) -> USBDeviceInfo? {
        system.device(named: port)?.info
    }

    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? {
        let (id, notices) = system.subscribe()
        subscription.withLock { $0 = id }
        return notices
    }

    func stopMonitoring() {
        if let id = subscription.withLock({ s in defer { s = nil }; return s }) { system.unsubscribe(id) }
    }

    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection {
        system.openAttempts.add(1, ordering: .relaxed)
        guard let device = system.device(bus: bus, address: address), device.info.descriptor.vendor == vendor,
            device.info.descriptor.product == product, system.hasNode(instance: device.instance)
        else {
            throw .noDevice(operation: "open", device: "bus \(bus) address \(address)")
        }
        if system.isAccessDenied(instance: device.instance) {
            throw AccessoryError(.accessDenied, "permission denied opening bus \(bus) address \(address)", operation: "open")
        }
        return try SimulatedDeviceConnection(system: system, device: device)
    }

    func uptime() -> SystemUptime { system.uptime }

    /// Counts the report until it ends: the simulation waits for it before it moves on.
    func report(_ work: @escaping @Sendable () async -> Void) {
        system.begin(.delivery)
        Task { [system] in
            await work()
            system.end(.delivery)
        }
    }

    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        system.timers.schedule(at: deadline, work)
    }

    var version: String? { "simulated" }
}
