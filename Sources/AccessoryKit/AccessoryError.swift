import AccessoryCore

/// The one error type of AccessoryKit. Catch a specific ``Code`` to handle one case.
public struct AccessoryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added, so a `switch` over codes needs a `default`
    /// (it is a struct of constants, not an enum, for that reason). Compare with `==`, or
    /// read ``disconnectReason``:
    ///
    ///     if let reason = error.code.disconnectReason { … } else if error.code == .timeout { … }
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case accessoryDisconnected(DisconnectReason)
            case timeout, stall, overflow, accessDenied, busy, notFound, protocolNotSupported, sessionClosed, cancelled, io
            case invalidArgument
        }

        private let kind: Kind

        /// The accessory went away; the reason says how it was found out.
        public static func accessoryDisconnected(_ reason: DisconnectReason) -> Code { Code(kind: .accessoryDisconnected(reason)) }
        /// The operation did not complete in time; the session stays usable.
        public static let timeout = Code(kind: .timeout)
        /// The endpoint halted (USB STALL). Clear it with `clearHalt`.
        public static let stall = Code(kind: .stall)
        /// The device sent more data than was asked for.
        public static let overflow = Code(kind: .overflow)
        /// No permission to open the device node. The message names the udev rule to add.
        public static let accessDenied = Code(kind: .accessDenied)
        /// Another session or process holds the interface.
        public static let busy = Code(kind: .busy)
        /// No connected accessory matches, or the connection is no longer registered.
        public static let notFound = Code(kind: .notFound)
        /// The accessory does not speak the protocol asked for.
        public static let protocolNotSupported = Code(kind: .protocolNotSupported)
        /// The session was closed.
        public static let sessionClosed = Code(kind: .sessionClosed)
        /// The task was cancelled; the session stays usable.
        public static let cancelled = Code(kind: .cancelled)
        /// Any other I/O failure.
        public static let io = Code(kind: .io)
        /// A length, count or duration outside what the call accepts, or more than the host
        /// can carry. The message names the value and the range; nothing was sent.
        public static let invalidArgument = Code(kind: .invalidArgument)

        /// How the accessory went away, when that is what happened.
        public var disconnectReason: DisconnectReason? {
            if case .accessoryDisconnected(let reason) = kind { return reason }
            return nil
        }

        /// `timeout`, `stall`, …, or `accessoryDisconnected(unplugged)`.
        public var description: String {
            switch kind {
            case .accessoryDisconnected(let reason): return "accessoryDisconnected(\(reason.code))"
            default: return "\(kind)"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human message, saying what failed and what to do.
    public var message: String
    /// The operation that failed, such as `libusb_open` or `bulk IN 0x81`.
    public var operation: String?
    /// The raw libusb error or errno, where there was one.
    public var rawValue: Int32?
    /// For a failed write or flush: how many of the bytes written since the output's
    /// previous error (or since the session opened) the accessory accepted. The rest were
    /// discarded, and nothing after them was sent: resend from there.
    public var bytesTransferred: Int?

    /// An error of kind `code`, with a message and what is known about the failure.
    public init(_ code: Code, _ message: String, operation: String? = nil, rawValue: Int32? = nil, bytesTransferred: Int? = nil) {
        self.code = code
        self.message = message
        self.operation = operation
        self.rawValue = rawValue
        self.bytesTransferred = bytesTransferred
    }

    public var description: String {
        var s = message
        // The operation in parentheses, unless the message names it already (a ghost's
        // evidence does: "ghost-evicted: bulk OUT 0x01 returned NO_DEVICE").
        if let operation, rawValue != nil || !message.contains(operation) {
            s += " (\(operation)" + (rawValue.map { ": \($0)" } ?? "") + ")"
        }
        return s
    }
}
