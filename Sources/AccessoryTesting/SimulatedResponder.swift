import AccessoryKit

/// The user's model of their accessory. It comes in two forms:
///
/// - A **write responder** (``init(onWrite:onControl:)``) says what the accessory does with
///   each OUT transfer the host sends in a session, and so what the host reads back on the
///   interface's first IN endpoint, and how it answers control requests.
/// - A **per-endpoint responder** (``init(onTransfer:)``) sees every transfer on every
///   endpoint, IN ones and control requests included (``SimulatedTransfer``), and answers
///   each: with bytes, a stall, an error, never, or any of these after a delay on the
///   virtual clock (``SimulatedTransfer/Answer``). This is the form for devices with several
///   endpoints, such as a fingerprint reader's bulk pair and interrupt IN, and for a
///   recorded conversation.
///
/// A responder is called on the simulated device's own serial queue (a control request: on
/// the calling task), one transfer at a time, in order per endpoint, once a transfer reaches
/// the head of its endpoint's queue; keep any state it needs in a `Mutex` or an actor it
/// does not await.
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

    /// Called with every transfer, when set (``init(onTransfer:)``); ``onWrite`` and
    /// ``onControl`` are then not called.
    public var onTransfer: (@Sendable (_ transfer: SimulatedTransfer, _ device: Context) -> SimulatedTransfer.Answer)?

    /// A responder that answers what the host writes to each interface, and its control
    /// requests.
    ///
    /// - Parameters:
    ///   - onWrite: answers the bytes the host wrote to an interface (its number).
    ///   - onControl: by default every control request stalls, as a device that knows no
    ///     vendor or class requests does.
    public init(
        onWrite: @escaping @Sendable (_ interface: Int, _ bytes: [UInt8]) -> Reply,
        onControl: @escaping @Sendable (_ request: ControlRequest, _ data: [UInt8]?) -> ControlReply = { _, _ in .stall }
    ) {
        self.onWrite = onWrite
        self.onControl = onControl
    }

    /// A per-endpoint responder: `onTransfer` answers every transfer the host makes, on any
    /// endpoint, and every control request (the Android Open Accessory requests of a phone
    /// from ``SimulatedAccessory/androidPhone(serial:product:responder:)`` aside). Its
    /// ``Context`` queues data on IN endpoints, for transfers answered with
    /// ``SimulatedTransfer/Answer/queued``.
    ///
    /// ```swift
    /// SimulatedResponder { transfer, device in
    ///     switch (transfer.kind, transfer.endpoint) {
    ///     case (.bulk, 0x01):                       // a command: its answer on 0x82
    ///         device.queue([0x90, 0x00], on: 0x82)
    ///         return .accept
    ///     case (.interrupt, 0x83):                  // a finger, a second from now
    ///         return .after(.seconds(1), .data([0x01]))
    ///     case (.control, _):
    ///         return .stall
    ///     default:
    ///         return .queued
    ///     }
    /// }
    /// ```
    public init(onTransfer: @escaping @Sendable (_ transfer: SimulatedTransfer, _ device: Context) -> SimulatedTransfer.Answer) {
        self.onWrite = { _, _ in .respond([]) }
        self.onControl = { _, _ in .stall }
        self.onTransfer = onTransfer
    }

    /// The accessory's side of its endpoints, for a per-endpoint responder: it can queue data
    /// on an IN endpoint at any time (it holds no strong reference to the device).
    public struct Context: Sendable {
        let endpoints: WeakEndpoints

        /// Queues `bytes` on IN `endpoint` as one IN transfer's worth (`[]` is a zero-length
        /// packet), for the host's IN transfers there that the responder answers with
        /// ``SimulatedTransfer/Answer/queued`` (a write responder's IN transfers always are).
        /// Nothing happens once the host has closed the device.
        public func queue(_ bytes: [UInt8], on endpoint: UInt8) {
            endpoints.target?.queue(bytes, on: endpoint)
        }
    }

    /// How the accessory answers `transfer`, in either form; a write responder's replies to
    /// OUT transfers are queued on `streamIn`, the interface's first IN endpoint.
    func answer(_ transfer: SimulatedTransfer, streamIn: UInt8?, _ context: Context) -> SimulatedTransfer.Answer {
        if let onTransfer { return onTransfer(transfer, context) }
        if let setup = transfer.setup {
            switch onControl(setup, transfer.isIn ? nil : transfer.data) {
            case .accept: return .accept
            case .data(let bytes): return .data(Array(bytes.prefix(transfer.length)))
            case .stall: return .stall
            }
        }
        if transfer.isIn { return .queued }
        switch onWrite(transfer.interface ?? 0, transfer.data) {
        case .respond(let chunks):
            if let streamIn { for chunk in chunks { context.queue(chunk, on: streamIn) } }
            return .accept
        case .stall:
            return .stall
        case .ignore:
            return .never
        }
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
