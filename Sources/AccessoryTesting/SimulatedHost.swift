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

    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        system.timers.schedule(at: deadline, work)
    }

    var version: String? { "simulated" }

    // MARK: Recovery

    /// The root hub of bus 1, `usb1`, whose ports switch one by one: `1-1` to `1-4`, or as
    /// many as the ports in use need. A port deeper down (`1-1.4`) is switched as one of its
    /// own hub's, but no hub is listed for it.
    func hubs() async -> [USBHub] {
        let numbers = system.portsInUse.compactMap { SysfsPortFiles.upstream(of: $0) }.filter { $0.hub == "usb1" }.map(\.number)
        let count = max(4, numbers.max() ?? 0)
        let ports = (1...count).map { n in
            let name = "1-\(n)"
            return USBHub.Port(
                number: n, name: name, powered: system.isPowered(port: name), hasDisableFile: true, device: system.device(named: name)?.info)
        }
        return [USBHub(name: "usb1", bus: 1, address: 1, usbVersion: "2.00", switching: .perPort, ports: ports)]
    }

    /// Switches `port` through its (simulated) `disable` file; logged in
    /// ``SimulatedUSB/powerLog`` when it changes. Off drops what is on it in the kernel's
    /// order; on brings back what was there, at the next address.
    func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        guard let up = SysfsPortFiles.upstream(of: port) else {
            throw AccessoryError(.invalidArgument, "'\(port)' is not a port (like 1-1.4 or 1-3)", operation: "power")
        }
        if on { await system.powerOn(port: port) } else { await system.powerOff(port: port) }
        return PortPowerReport(port: port, hub: up.hub, on: on, method: .disableFile)
    }

    /// `authorized` 0 then 1: the device on `port` leaves in the kernel's order and comes
    /// back at the next address.
    func reauthorize(port: String) async throws(AccessoryError) {
        guard await system.reauthorize(port: port) else {
            throw AccessoryError(.notFound, "no device on port \(port)", operation: "reauthorize")
        }
    }
}
