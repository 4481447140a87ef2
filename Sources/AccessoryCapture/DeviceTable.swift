/// The devices of a capture in order of first appearance, each with the vendor and product of
/// the first recorded GET_DESCRIPTOR(DEVICE) answer: what ``USBCapture`` and
/// ``USBCaptureSummary`` both report, kept as the events stream by.
///
/// It holds at most `limits.devices` devices and `limits.pendingRequests` descriptor requests
/// in flight, whatever the file holds, and counts in ``drops`` what it left out.
struct DeviceTable {
    private(set) var devices: [USBCapture.Device] = []
    private var indices = SlotTable<UInt32>()
    private var descriptorRequests: Set<USBMonRecord.URBKey> = []
    /// Events and requests left out.
    private(set) var drops: USBCaptureDrops
    private let limits: USBCaptureLimits

    init(limits: USBCaptureLimits) {
        self.limits = limits
        self.drops = USBCaptureDrops(limits: limits)
    }

    /// Notes `record` (its data in `data`) and returns the index of its device in ``devices``,
    /// or `nil` for a device past the limit (the event is counted as skipped).
    mutating func observe(_ record: USBMonRecord, data: UnsafeRawBufferPointer) -> Int? {
        let header = record.header
        let key = UInt32(header.bus) << 8 | UInt32(header.device)
        let index: Int
        if indices.count < limits.devices || indices.contains(key) {
            let (slot, isNew) = indices.slot(of: key)
            if isNew { devices.append(USBCapture.Device(bus: Int(header.bus), address: Int(header.device))) }
            index = slot
        } else {
            drops.events += 1
            return nil
        }
        guard header.kind == .control else { return index }
        switch header.event {
        case .submit:
            guard header.setup?.isDeviceDescriptorRequest == true else { break }
            if descriptorRequests.count < limits.pendingRequests || descriptorRequests.contains(record.key) {
                descriptorRequests.insert(record.key)
            } else {
                drops.requests += 1
            }
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
