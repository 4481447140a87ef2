/// The devices of a capture in order of first appearance, each with the vendor and product of
/// the first recorded GET_DESCRIPTOR(DEVICE) answer: what ``USBCapture`` and
/// ``USBCaptureSummary`` both report, kept as the events stream by.
///
/// It holds one entry per device and one per descriptor request still in flight, whatever the
/// capture's length.
struct DeviceTable {
    private(set) var devices: [USBCapture.Device] = []
    private var indices = SlotTable<UInt32>()
    private var descriptorRequests: Set<USBMonRecord.URBKey> = []

    /// Notes `record` (its data in `data`) and returns the index of its device in ``devices``.
    mutating func observe(_ record: USBMonRecord, data: UnsafeRawBufferPointer) -> Int {
        let header = record.header
        let (index, isNew) = indices.slot(of: UInt32(header.bus) << 8 | UInt32(header.device))
        if isNew { devices.append(USBCapture.Device(bus: Int(header.bus), address: Int(header.device))) }
        guard header.kind == .control else { return index }
        switch header.event {
        case .submit:
            if header.setup?.isDeviceDescriptorRequest == true { descriptorRequests.insert(record.key) }
        case .complete, .error:
            guard !descriptorRequests.isEmpty, descriptorRequests.remove(record.key) != nil else { break }
            // A device descriptor: bLength, bDescriptorType 1, …, idVendor at 8, idProduct at 10.
            // Not at address 0: that entry is whatever device is enumerating, and the IDs go
            // to the address it is given, so that it never stands in for the device.
            if header.event == .complete, header.status == 0, data.count >= 12, data[1] == 1, devices[index].vendor == nil, header.device != 0 {
                devices[index].vendor = data.u16(8, bigEndian: false)
                devices[index].product = data.u16(10, bigEndian: false)
            }
        }
        return index
    }
}
