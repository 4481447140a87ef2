/// The header Linux usbmon puts before each event's data: 64 bytes in link type 220
/// (`LINKTYPE_USB_LINUX_MMAPPED`), the first 48 of them in link type 189 (`LINKTYPE_USB_LINUX`).
///
/// Its integers are in the byte order of the file or section that holds it; the setup packet is
/// in USB order. An isochronous event's descriptors (16 bytes each) come before its data.
package struct USBMonHeader: Hashable, Sendable {
    /// What happened to the URB.
    package enum Event: UInt8, Sendable {
        /// `S`: the host submitted it.
        case submit = 0x53
        /// `C`: it completed (its callback ran).
        case complete = 0x43
        /// `E`: its submission failed.
        case error = 0x45
    }

    /// usbmon's `flag_setup` when the setup packet is present, and `flag_data` when data is.
    package static let present: UInt8 = 0
    /// `flag_setup` of an event whose setup field does not apply.
    package static let setupNotRelevant: UInt8 = 0x2d  // '-'
    /// The status of a submission: `-EINPROGRESS`.
    package static let inProgress: Int32 = -115

    package var urbID: UInt64
    package var event: Event
    package var kind: USBCapture.Transfer.Kind
    /// With the direction bit (0x80 = IN).
    package var endpoint: UInt8
    package var device: UInt8
    package var bus: UInt16
    package var setupFlag: UInt8
    package var dataFlag: UInt8
    package var seconds: Int64
    package var microseconds: Int32
    package var status: Int32
    /// `S`: the URB's buffer length; `C`: the length actually transferred.
    package var length: UInt32
    /// The bytes of data (and isochronous descriptors) that follow the header.
    package var capturedLength: UInt32
    /// The setup field's eight bytes, the first in the low byte.
    package var setupField: UInt64
    package var interval: Int32
    package var startFrame: Int32
    package var transferFlags: UInt32
    /// The isochronous descriptors after the header (the 48-byte header has no such field:
    /// there it comes from the setup field's `numdesc`).
    package var descriptorCount: UInt32

    /// A header with these fields and zeros elsewhere.
    package init(
        urbID: UInt64, event: Event, kind: USBCapture.Transfer.Kind, endpoint: UInt8, device: UInt8, bus: UInt16,
        setupFlag: UInt8 = USBMonHeader.setupNotRelevant, dataFlag: UInt8 = USBMonHeader.present, seconds: Int64 = 0,
        microseconds: Int32 = 0, status: Int32 = 0, length: UInt32 = 0, capturedLength: UInt32 = 0, setupField: UInt64 = 0,
        interval: Int32 = 0, startFrame: Int32 = 0, transferFlags: UInt32 = 0, descriptorCount: UInt32 = 0
    ) {
        self.urbID = urbID
        self.event = event
        self.kind = kind
        self.endpoint = endpoint
        self.device = device
        self.bus = bus
        self.setupFlag = setupFlag
        self.dataFlag = dataFlag
        self.seconds = seconds
        self.microseconds = microseconds
        self.status = status
        self.length = length
        self.capturedLength = capturedLength
        self.setupField = setupField
        self.interval = interval
        self.startFrame = startFrame
        self.transferFlags = transferFlags
        self.descriptorCount = descriptorCount
    }

    /// The header length of a usbmon link type: 64 for 220, 48 for 189, `nil` for the others.
    package static func length(ofLinkType linkType: UInt16) -> Int? {
        switch linkType {
        case 220: 64
        case 189: 48
        default: nil
        }
    }

    /// Reads the header at the start of `raw` (at least `headerLength` bytes); the reason when
    /// its event or transfer type is unknown.
    package init(_ raw: UnsafeRawBufferPointer, headerLength: Int, bigEndian: Bool) throws(Problem) {
        guard let event = Event(rawValue: raw[8]) else {
            throw Problem(reason: "unknown URB type \(hex(UInt32(raw[8]), 2)) (not S, C or E)")
        }
        guard let kind = USBCapture.Transfer.Kind(usbmon: raw[9]) else {
            throw Problem(reason: "unknown transfer type \(raw[9])")
        }
        self.init(
            urbID: raw.u64(0, bigEndian: bigEndian), event: event, kind: kind, endpoint: raw[10], device: raw[11],
            bus: raw.u16(12, bigEndian: bigEndian), setupFlag: raw[14], dataFlag: raw[15],
            seconds: Int64(bitPattern: raw.u64(16, bigEndian: bigEndian)),
            microseconds: Int32(bitPattern: raw.u32(24, bigEndian: bigEndian)),
            status: Int32(bitPattern: raw.u32(28, bigEndian: bigEndian)), length: raw.u32(32, bigEndian: bigEndian),
            capturedLength: raw.u32(36, bigEndian: bigEndian), setupField: raw.u64(40, bigEndian: false))
        if headerLength >= 64 {
            interval = Int32(bitPattern: raw.u32(48, bigEndian: bigEndian))
            startFrame = Int32(bitPattern: raw.u32(52, bigEndian: bigEndian))
            transferFlags = raw.u32(56, bigEndian: bigEndian)
            descriptorCount = raw.u32(60, bigEndian: bigEndian)
        } else if kind == .isochronous {
            descriptorCount = raw.u32(44, bigEndian: bigEndian)
        }
    }

    /// Why a header could not be read.
    package struct Problem: Error {
        var reason: String
    }

    /// The setup packet, when the event is a submission whose setup field holds one.
    package var setup: USBCapture.Setup? {
        guard event == .submit, kind == .control, setupFlag == Self.present else { return nil }
        return USBCapture.Setup(field: setupField)
    }

    /// Whether data flows from the device to the host.
    package var isIn: Bool { endpoint & 0x80 != 0 }

    /// Appends the header's first `headerLength` bytes (64 or 48) in `writer`'s byte order.
    package func append(to writer: inout ByteWriter, headerLength: Int = 64) {
        writer.u64(urbID)
        writer.u8(event.rawValue)
        writer.u8(kind.usbmon)
        writer.u8(endpoint)
        writer.u8(device)
        writer.u16(bus)
        writer.u8(setupFlag)
        writer.u8(dataFlag)
        writer.u64(UInt64(bitPattern: seconds))
        writer.u32(UInt32(bitPattern: microseconds))
        writer.u32(UInt32(bitPattern: status))
        writer.u32(length)
        writer.u32(capturedLength)
        if kind == .isochronous && setupField == 0 {
            writer.u32(0)  // error_count
            writer.u32(descriptorCount)  // numdesc
        } else {
            withUnsafeBytes(of: setupField.littleEndian) { writer.raw($0) }
        }
        guard headerLength >= 64 else { return }
        writer.u32(UInt32(bitPattern: interval))
        writer.u32(UInt32(bitPattern: startFrame))
        writer.u32(transferFlags)
        writer.u32(descriptorCount)
    }
}
