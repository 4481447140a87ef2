import AccessoryCore

extension AccessoryManager {
    /// Every hub of the host, with how its ports switch power and what is on each port.
    package nonisolated func hubs() async -> [USBHub] { await host.hubs() }

    /// Switches one port's power (`1-1.4`), and its USB 3 peer's; see
    /// ``USBHost/setPortPower(_:on:)``.
    package nonisolated func setPortPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        try await host.setPortPower(port, on: on)
    }

    /// Switches one port off, waits until the device on it has left (up to 2 s), then
    /// `pause`, and switches it on again: a power cycle. It waits on the configuration's
    /// clock (a simulation's virtual one).
    package nonisolated func cyclePortPower(_ port: String, pause: Duration = .seconds(2)) async throws(AccessoryError) -> [PortPowerReport] {
        let off = try await host.setPortPower(port, on: false)
        let clock = configuration.clock
        // Up to 2 s, 5 ms at a time.
        var looks = 0
        while host.device(named: port) != nil && looks < 400 {
            try? await clock.sleep(for: .milliseconds(5))
            looks += 1
        }
        try? await clock.sleep(for: pause)
        let on = try await host.setPortPower(port, on: true)
        return [off, on]
    }

    /// `authorized` 0 then 1 for the device on `port`: a logical disconnect and
    /// re-enumeration with power on.
    package nonisolated func reauthorize(port: String) async throws(AccessoryError) {
        try await host.reauthorize(port: port)
    }
}
