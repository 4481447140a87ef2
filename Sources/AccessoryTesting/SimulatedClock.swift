/// The virtual clock of a ``SimulatedUSB``: it moves only when the simulation says so
/// (``SimulatedUSB/advance(by:)``), and a sleep on it ends when the simulation reaches its
/// deadline (or when the sleeping task is cancelled). A manager on the simulation uses it, so
/// a test never waits in real time. A sleep that nothing can end (nothing happens in the
/// simulation for 8 s of real time) throws an `AccessoryError` with code
/// `.timeout` that says to advance the clock, instead of hanging the test.
public struct SimulatedClock: Clock, Sendable {
    /// A point on the virtual clock.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the simulation started.
        public var offset: Duration

        /// This instant moved by `duration`.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// How far `other` lies after this instant.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    let system: SimulatedSystem

    /// The simulation's current time.
    public var now: Instant { Instant(offset: system.now) }
    /// One nanosecond: the virtual clock moves by whatever the simulation says.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Waits until the simulation reaches `deadline`.
    /// - Throws: `CancellationError` when the task is cancelled; an `AccessoryError` (`.timeout`)
    ///   when nothing in the simulation moves for 8 s of real time.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await system.sleep(until: deadline.offset)
    }
}
