extension USBCapture {
    /// One URB: its submission, paired by URB ID with its completion when the capture has one.
    public struct Transfer: Hashable, Sendable {
        /// The transfer type of an endpoint.
        public enum Kind: Hashable, Sendable {
            /// Control: a setup packet, then an optional data stage.
            case control
            /// Bulk.
            case bulk
            /// Interrupt.
            case interrupt
            /// Isochronous.
            case isochronous
        }

        /// The endpoint's transfer type.
        public var kind: Kind
        /// The endpoint address, with the direction bit (0x80 = IN); control transfers are 0x00 or 0x80.
        public var endpoint: UInt8
        /// The setup packet of a control transfer; `nil` for the other kinds.
        public var setup: Setup?
        /// OUT: the bytes the host sent; IN: the bytes the device returned (empty until completed).
        public var data: [UInt8]
        /// The URB's buffer length at submission.
        public var requestedLength: Int
        /// How many data bytes the transfer carried: usbmon's `length` of the submission for
        /// OUT, of the completion for IN (0 until it completes). ``data`` holds fewer where the
        /// capture cut them (a snap length, as `tshark -s` sets, or usbmon's own cap); see
        /// ``isCut``.
        public var length: Int
        /// The completion's status: 0, or a negative errno (`-EPIPE` a stall, `-ENOENT` or
        /// `-ECONNRESET` cancelled by the host, …); `nil` when the capture ends before it completes.
        public var status: Int32?
        /// When it was submitted, since the capture's first packet.
        public var submitted: Duration
        /// When it completed, since the capture's first packet; `nil` when it did not.
        public var completed: Duration?
        /// The URB ID (the kernel's address of the URB; reused once the URB is done).
        package var urbID: UInt64

        /// A transfer with these fields; `length` is `data.count` unless given.
        package init(
            kind: Kind, endpoint: UInt8, setup: Setup?, data: [UInt8], requestedLength: Int, length: Int? = nil,
            status: Int32?, submitted: Duration, completed: Duration?, urbID: UInt64
        ) {
            self.kind = kind
            self.endpoint = endpoint
            self.setup = setup
            self.data = data
            self.requestedLength = requestedLength
            self.length = length ?? data.count
            self.status = status
            self.submitted = submitted
            self.completed = completed
            self.urbID = urbID
        }

        /// Whether data flows from the device to the host.
        package var isIn: Bool { endpoint & 0x80 != 0 }

        /// Whether the capture kept fewer data bytes than the transfer carried
        /// (`data.count < length`): its data cannot be known whole.
        public var isCut: Bool { data.count < length }
    }
}

extension USBCapture.Transfer.Kind {
    /// usbmon's transfer type: 0 isochronous, 1 interrupt, 2 control, 3 bulk.
    package init?(usbmon value: UInt8) {
        switch value {
        case 0: self = .isochronous
        case 1: self = .interrupt
        case 2: self = .control
        case 3: self = .bulk
        default: return nil
        }
    }

    /// usbmon's transfer type: 0 isochronous, 1 interrupt, 2 control, 3 bulk.
    package var usbmon: UInt8 {
        switch self {
        case .isochronous: 0
        case .interrupt: 1
        case .control: 2
        case .bulk: 3
        }
    }

    /// The lowercase name: `control`, `bulk`, `interrupt`, `isochronous`.
    package var name: String {
        switch self {
        case .control: "control"
        case .bulk: "bulk"
        case .interrupt: "interrupt"
        case .isochronous: "isochronous"
        }
    }

    /// Where it sorts among endpoints of one address: control, bulk, interrupt, isochronous.
    package var rank: Int {
        switch self {
        case .control: 0
        case .bulk: 1
        case .interrupt: 2
        case .isochronous: 3
        }
    }
}
