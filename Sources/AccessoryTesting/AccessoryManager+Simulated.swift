import AccessoryCore
import AccessoryKit

extension AccessoryManager {
    /// Starts a manager on a simulated USB system: the real manager, with the simulation as
    /// its OS truth and hotplug source, on the simulation's virtual clock (the
    /// configuration's `clock` is replaced by ``SimulatedUSB/clock``).
    public init(configuration: Configuration = .init(), usb: SimulatedUSB) async throws(AccessoryError) {
        var configuration = configuration
        configuration.clock = usb.clock
        try await self.init(configuration: configuration, host: await usb.makeHost())
    }
}

/// Runs `body` with a manager started on `usb`, and shuts the manager down afterwards,
/// whether `body` returns or throws.
public func withAccessoryManager<R: Sendable>(
    configuration: AccessoryManager.Configuration = .init(), usb: SimulatedUSB,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (AccessoryManager) async throws -> R
) async throws -> R {
    try await AccessoryManager(configuration: configuration, usb: usb).run(body)
}
