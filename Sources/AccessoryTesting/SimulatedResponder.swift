import AccessoryKit

/// The user's model of their accessory: what it does with each bulk OUT transfer the host
/// sends in a session (and so what the host reads back on bulk IN), and how it answers
/// control requests.
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

    /// How the accessory answers one control request.
    public enum ControlReply: Sendable, Hashable {
        /// Accepts an OUT request (its data is taken) or answers an IN request with no data.
        case accept
        /// Answers an IN request with these bytes (the host gets at most what it asked for).
        case data([UInt8])
        /// Refuses the request (a STALL): the host's transfer throws `.stall`.
        case stall
    }

    /// Called with the interface (protocol) number and the bytes of each OUT transfer.
    public var onWrite: @Sendable (_ interface: Int, _ bytes: [UInt8]) -> Reply
    /// Called with each control request the host sends, and its data: the bytes of an OUT
    /// request, or `nil` for an IN request.
    public var onControl: @Sendable (_ request: ControlRequest, _ data: [UInt8]?) -> ControlReply

    /// - Parameter onControl: by default every control request stalls, as a device that
    ///   knows no vendor or class requests does.
    public init(
        onWrite: @escaping @Sendable (_ interface: Int, _ bytes: [UInt8]) -> Reply,
        onControl: @escaping @Sendable (_ request: ControlRequest, _ data: [UInt8]?) -> ControlReply = { _, _ in .stall }
    ) {
        self.onWrite = onWrite
        self.onControl = onControl
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
