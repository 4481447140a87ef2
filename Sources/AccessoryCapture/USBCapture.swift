/// A Linux usbmon capture: the devices it shows and each one's transfers, submissions paired
/// with their completions.
///
/// It reads pcapng (any number of sections and interfaces, either byte order) and classic
/// pcap, link types 220 (`LINKTYPE_USB_LINUX_MMAPPED`) and 189 (`LINKTYPE_USB_LINUX`), as
/// Wireshark, `tcpdump -i usbmonN` and ``AccessoryCapture`` write them; packets of other link
/// types are skipped. The file is read in chunks of 1 MiB; the transfers are kept in memory.
///
/// ```swift
/// let capture = try USBCapture(path: "Fixtures/reader.pcapng")
/// for device in capture.devices { print(device.bus, device.address, device.vendor as Any) }
/// let transfers = capture.transfers(of: capture.devices[0])
/// ```
public struct USBCapture: Sendable {
    /// Every device seen, in order of first appearance.
    public let devices: [Device]
    /// Each device's transfers, in the order of ``devices``.
    private let transfersByDevice: [[Transfer]]
    /// The block or record cut short at the end of the file, if one was (it was dropped).
    package let truncation: USBCaptureError?
    /// What was left out on reaching a limit of ``USBCaptureLimits`` (a hostile file).
    package let drops: USBCaptureDrops

    /// What the reader left out to keep its memory bounded, one sentence each: packets of
    /// interfaces past the 4096 a pcapng section may have, events of devices past the first
    /// 4096, submissions made while 4096 were waiting for their completion (left unpaired).
    /// Empty for any real capture.
    public var dropped: [String] { drops.sentences }

    /// Reads the capture at `path`.
    ///
    /// A submission is paired with the next completion (`C`) or submission error (`E`) of its
    /// URB ID on its bus; a completion whose submission is not in the capture is left out.
    /// A file cut short in its last packet (a capture killed mid-write) keeps everything before it.
    ///
    /// - Throws: ``USBCaptureError`` naming the file, the byte offset and the reason, when the
    ///   file cannot be opened or is malformed.
    public init(path: String) throws(USBCaptureError) {
        var reader = try USBMonReader(path: path)
        try self.init(reading: &reader)
    }

    /// Reads every event of `reader`.
    package init(reading reader: inout USBMonReader) throws(USBCaptureError) {
        var table = DeviceTable(limits: reader.limits)
        var transfers: [[Transfer]] = []
        var pending: [USBMonRecord.URBKey: (device: Int, index: Int)] = [:]
        var unpaired = 0
        var first: Int64?
        while let record = try reader.next() {
            let data = reader.bytes(of: record)
            guard let device = table.observe(record, data: data) else { continue }
            if device == transfers.count { transfers.append([]) }
            let header = record.header
            let start = first ?? record.timestamp
            first = start
            let time = Duration.nanoseconds(record.timestamp &- start)
            switch header.event {
            case .submit:
                // A submission whose ID is still pending replaces it there: the earlier one
                // never completed in this capture.
                if pending.count < reader.limits.pendingRequests || pending[record.key] != nil {
                    pending[record.key] = (device, transfers[device].count)
                } else {
                    unpaired += 1
                }
                transfers[device].append(
                    Transfer(
                        kind: header.kind, endpoint: header.endpoint, setup: header.setup,
                        data: header.isIn ? [] : [UInt8](data), requestedLength: Int(header.length),
                        length: header.isIn ? 0 : Int(header.length), status: nil, submitted: time, completed: nil,
                        urbID: header.urbID))
            case .complete, .error:
                guard let (d, i) = pending.removeValue(forKey: record.key) else { continue }
                transfers[d][i].status = header.status
                transfers[d][i].completed = time
                if header.event == .complete && transfers[d][i].isIn {
                    transfers[d][i].data = [UInt8](data)
                    transfers[d][i].length = Int(header.length)
                }
            }
        }
        devices = table.devices
        transfersByDevice = transfers
        truncation = reader.truncation
        var drops = table.drops
        (drops.interfaces, drops.packets) = reader.droppedInterfaces
        drops.requests = unpaired  // the descriptor requests it left out are among these
        self.drops = drops
    }

    /// `device`'s transfers (matched by bus and address) in submission order; empty for a
    /// device the capture does not show.
    public func transfers(of device: Device) -> [Transfer] {
        guard let i = devices.firstIndex(where: { $0.bus == device.bus && $0.address == device.address }) else { return [] }
        return transfersByDevice[i]
    }
}
