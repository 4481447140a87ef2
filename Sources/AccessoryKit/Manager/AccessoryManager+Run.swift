import AccessoryCore


/// Runs `body` with a started ``AccessoryManager``, and shuts the manager down afterwards,
/// whether `body` returns or throws.
public func withAccessoryManager<R: Sendable>(
    configuration: AccessoryManager.Configuration = .init(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (AccessoryManager) async throws -> R
) async throws -> R {
    try await AccessoryManager(configuration: configuration).run(body)
}

extension AccessoryManager {
    /// Runs `body` with this manager, then shuts it down, whether `body` returns or throws.
    package func run<R: Sendable>(
        isolation: isolated (any Actor)? = #isolation, _ body: (AccessoryManager) async throws -> R
    ) async throws -> R {
        let result: R
        do {
            result = try await body(self)
        } catch {
            await shutdown()
            throw error
        }
        await shutdown()
        return result
    }
}
