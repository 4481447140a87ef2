import AccessoryCore

/// The lifetime of a session that `withSession` gives its body: opened first, flushed when
/// the body returns, and closed however the body ends (returns, throws or is cancelled).
enum SessionScope {
    /// Opens a session with `opening`, runs `body` with it, then flushes and closes it.
    /// `failure` lifts the session's own errors (open, flush) into `body`'s error type.
    static func run<R: Sendable, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation,
        opening: () async throws(AccessoryError) -> AccessorySession,
        _ body: (AccessorySession) async throws(Failure) -> R, failure: (AccessoryError) -> Failure
    ) async throws(Failure) -> R {
        let session: AccessorySession
        do { session = try await opening() } catch { throw failure(error) }
        let result: R
        do {
            result = try await body(session)
        } catch {
            await session.close()
            throw error
        }
        do {
            // Writes return once queued: what `body` wrote reaches the accessory before the
            // session closes, or its failure is thrown.
            try await session.flush()
        } catch {
            await session.close()
            throw failure(error)
        }
        await session.close()
        return result
    }
}
