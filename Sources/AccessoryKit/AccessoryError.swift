import AccessoryCore

/// The one error type of AccessoryKit. Catch a specific ``Code`` to handle one case.
public struct AccessoryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added.
    public enum Code: Hashable, Sendable {
        /// The accessory went away; the reason says how it was found out.
        case accessoryDisconnected(DisconnectReason)
        case timeout
        /// The endpoint halted (USB STALL). Clear it with `clearStall`.
        case stall
        /// The device sent more data than was asked for.
        case overflow
        /// No permission to open the device node. The message names the udev rule to add.
        case accessDenied
        /// Another session or process holds the interface.
        case busy
        case notFound
        case protocolNotSupported
        case sessionClosed
        case cancelled
        /// Any other I/O failure.
        case io
    }

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

    public init(_ code: Code, _ message: String, operation: String? = nil, rawValue: Int32? = nil, bytesTransferred: Int? = nil) {
        self.code = code
        self.message = message
        self.operation = operation
        self.rawValue = rawValue
        self.bytesTransferred = bytesTransferred
    }

    public var description: String {
        var s = message
        if let operation { s += " (\(operation)" + (rawValue.map { ": \($0)" } ?? "") + ")" }
        return s
    }
}
