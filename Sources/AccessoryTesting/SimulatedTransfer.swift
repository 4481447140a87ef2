import AccessoryKit

/// One transfer the host makes on a simulated accessory, as a per-endpoint responder
/// (``SimulatedResponder/init(onTransfer:)``) sees it: a bulk or interrupt transfer on one
/// endpoint, or a control request.
///
/// The responder sees every transfer: those of `AccessorySession.transferIn(_:length:timeout:)`
/// and `AccessorySession.transferOut(_:_:timeout:)`, those the session's streams
/// make (IN transfers of `AccessorySession.Options.transferSize` bytes, from the
/// first read on), and control requests, the manager's own included.
public struct SimulatedTransfer: Sendable, Hashable, CustomStringConvertible {
    /// What kind of transfer it is.
    public enum Kind: Sendable, Hashable {
        case control, bulk, interrupt
    }

    /// Control, bulk or interrupt.
    public var kind: Kind
    /// The endpoint address, with bit 7 set for IN; `0x00` or `0x80` for a control request.
    public var endpoint: UInt8
    /// The number of the interface the endpoint belongs to in its current alternate setting;
    /// `nil` for a control request.
    public var interface: Int?
    /// OUT: the bytes the host sends (a control request's data stage). IN: empty.
    public var data: [UInt8]
    /// IN: the most bytes the host asks for (a control request's `wLength`). OUT: the
    /// number of bytes sent.
    public var length: Int
    /// A control request's setup; `nil` for bulk and interrupt transfers.
    public var setup: ControlRequest?

    /// A transfer as the host makes it.
    public init(kind: Kind, endpoint: UInt8, interface: Int? = nil, data: [UInt8] = [], length: Int, setup: ControlRequest? = nil) {
        self.kind = kind
        self.endpoint = endpoint
        self.interface = interface
        self.data = data
        self.length = length
        self.setup = setup
    }

    /// Whether data flows from the accessory to the host (bit 7 of ``endpoint``).
    public var isIn: Bool { endpoint & 0x80 != 0 }

    /// `bulk OUT 0x01, 4 bytes`, `interrupt IN 0x83, up to 64 bytes`, `control IN standard device request 6 …`.
    public var description: String {
        let direction = isIn ? "IN" : "OUT"
        let size = isIn ? "up to \(length) bytes" : "\(data.count) bytes"
        if let setup { return "control \(direction) \(setup), \(size)" }
        return "\(kind) \(direction) 0x\(String(endpoint, radix: 16)), \(size)"
    }

    /// How a transfer ends that does not complete.
    public enum Failure: Sendable, Hashable {
        /// A protocol error (EPROTO, EILSEQ): libusb's `LIBUSB_TRANSFER_ERROR`. On an IN
        /// transfer the host takes it, as on hardware, as a sign that the device may be
        /// gone, and asks the manager.
        case protocolError
        /// The device is gone (ENODEV, ESHUTDOWN): the host asks the manager.
        case noDevice
        /// The device sent more than the host asked for (EOVERFLOW).
        case overflow
    }

    /// How the accessory answers a transfer.
    public indirect enum Answer: Sendable, Hashable {
        /// IN: the accessory sends these bytes (more than ``SimulatedTransfer/length`` is an
        /// overflow, as on hardware; `[]` is a zero-length packet). OUT: it takes the bytes.
        /// A control IN request gets at most `wLength` of them.
        case data([UInt8])
        /// OUT: takes the bytes. IN: a zero-length packet. Control: the status stage.
        case accept
        /// IN: the next chunk queued on this endpoint (by ``SimulatedResponder/Context/queue(_:on:)``,
        /// or by a write responder's ``SimulatedResponder/Reply/respond(_:)``), waiting until
        /// there is one; a chunk longer than the transfer is read by the next transfers too.
        /// OUT and control: as ``accept``.
        case queued
        /// A STALL handshake: the host's call throws `.stall`, and the endpoint stays halted
        /// (every later transfer on it stalls too) until the host clears the halt. On a
        /// control request, only that request is refused.
        case stall
        /// The transfer ends with this failure.
        case failure(Failure)
        /// The host's call fails with exactly this error (a replay's divergence, say).
        case error(AccessoryError)
        /// Never completes: only the host's timeout or cancellation ends it. Later transfers on
        /// the endpoint wait behind it, as on hardware.
        case never
        /// `answer`, once the virtual clock has moved on by `delay` (``SimulatedUSB/advance(by:)``).
        /// Later transfers on the endpoint wait behind it.
        case after(Duration, Answer)
    }
}
