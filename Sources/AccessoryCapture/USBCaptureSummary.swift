/// What `accessoryctl capture summary` reports: per device, per endpoint, the transfers that
/// completed with status 0 and the bytes they moved, counted as the events stream by.
///
/// Memory holds one entry per device and per endpoint, whatever the capture's length, and at
/// most the reader's ``USBCaptureLimits`` of devices and endpoints (``drops`` counts what was
/// left out).
package struct USBCaptureSummary: Sendable {
    /// One endpoint of a device (control counts once per direction: 0x00 and 0x80).
    package struct Endpoint: Hashable, Sendable {
        /// The endpoint address, with the direction bit.
        package var address: UInt8
        package var kind: USBCapture.Transfer.Kind
        /// Completions (`C`) with status 0.
        package var completed: Int
        /// The sum of those completions' actual lengths (usbmon's `length` field).
        package var bytes: Int
        /// Events whose data the capture cut (fewer bytes captured than the transfer
        /// carried: OUT submissions and IN completions).
        package var cut = 0
    }

    /// A device and its endpoints, sorted by address, then kind.
    package struct Device: Hashable, Sendable {
        package var device: USBCapture.Device
        package var endpoints: [Endpoint]
    }

    /// Every device seen, in order of first appearance.
    package private(set) var devices: [Device] = []
    /// The usbmon events read.
    package private(set) var events = 0
    /// The block or record cut short at the end of the file, if one was (it was dropped).
    package private(set) var truncation: USBCaptureError?
    /// What was left out on reaching a limit of ``USBCaptureLimits`` (a hostile file).
    package private(set) var drops = USBCaptureDrops(limits: .standard)

    /// Summarizes the capture at `path`.
    package init(path: String, chunkSize: Int = CapturePacketReader.chunkSize) throws(USBCaptureError) {
        var reader = try USBMonReader(path: path, chunkSize: chunkSize)
        try self.init(reading: &reader)
    }

    /// Summarizes every event of `reader`.
    package init(reading reader: inout USBMonReader) throws(USBCaptureError) {
        var table = DeviceTable(limits: reader.limits)
        var slots = SlotTable<Int>()
        var counts: [(device: Int, endpoint: Endpoint)] = []
        var skipped = 0
        while let record = try reader.next() {
            events += 1
            let header = record.header
            guard let device = table.observe(record, data: reader.bytes(of: record)) else { continue }
            let key = device << 16 | Int(header.endpoint) << 8 | Int(header.kind.usbmon)
            guard slots.count < reader.limits.endpoints || slots.contains(key) else {
                skipped += 1
                continue
            }
            let (slot, isNew) = slots.slot(of: key)
            if isNew { counts.append((device, Endpoint(address: header.endpoint, kind: header.kind, completed: 0, bytes: 0))) }
            if header.event == .complete && header.status == 0 {
                counts[slot].endpoint.completed += 1
                counts[slot].endpoint.bytes += Int(header.length)
            }
            // Data the transfer carried: an OUT's at submission, an IN's at completion.
            let carriesData = header.isIn ? header.event == .complete : header.event == .submit
            if carriesData && header.kind != .isochronous && record.dataCount < Int(header.length) {
                counts[slot].endpoint.cut += 1
            }
        }
        devices = table.devices.map { Device(device: $0, endpoints: []) }
        for (device, endpoint) in counts { devices[device].endpoints.append(endpoint) }
        for i in devices.indices {
            devices[i].endpoints.sort { ($0.address, $0.kind.rank) < ($1.address, $1.kind.rank) }
        }
        truncation = reader.truncation
        drops = table.drops
        (drops.interfaces, drops.packets) = reader.droppedInterfaces
        drops.events += skipped
    }
}
