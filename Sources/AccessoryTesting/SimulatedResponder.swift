/// The user's model of their accessory in sessions: what it does with each bulk OUT transfer
/// the host sends, and so what the host reads back on bulk IN.
///
/// A responder is called on the simulated device's own serial queue, one transfer at a time,
/// in order; keep any state it needs in a `Mutex` or an actor it does not await.
public struct SimulatedResponder: Sendable {
    /// What the accessory does with one OUT transfer.
    public enum Reply: Sendable, Hashable {
        /// Accepts the bytes and sends these chunks back on IN (each chunk is one IN
        /// transfer's worth; an empty chunk is a zero-length packet). `[]` sends nothing.
        case respond([[UInt8]])
        /// Refuses the transfer with a STALL handshake: the host's write throws `.stall`
        /// until it clears the halt.
        case stall
        /// Never accepts the transfer: the host's write times out, if it has a timeout.
        case ignore
    }

    /// Called with the interface (protocol) number and the bytes of each OUT transfer.
    public var onWrite: @Sendable (_ interface: Int, _ bytes: [UInt8]) -> Reply

    public init(onWrite: @escaping @Sendable (_ interface: Int, _ bytes: [UInt8]) -> Reply) {
        self.onWrite = onWrite
    }

    /// Echoes every OUT transfer on IN, as `accessory-sim`'s loopback accessory does.
    public static let loopback = SimulatedResponder { _, bytes in .respond([bytes]) }

    /// Answers each OUT transfer with what `transform` makes of it (one IN chunk, or none
    /// when it returns `nil`).
    public static func transform(_ transform: @escaping @Sendable ([UInt8]) -> [UInt8]?) -> SimulatedResponder {
        SimulatedResponder { _, bytes in .respond(transform(bytes).map { [$0] } ?? []) }
    }

    /// Accepts everything and sends nothing back.
    public static let sink = SimulatedResponder { _, _ in .respond([]) }
}
