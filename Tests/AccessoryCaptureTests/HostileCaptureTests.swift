import AccessoryCapture
import Testing

/// Files made to cost memory or to look empty: the reader keeps at most a fixed number of
/// interfaces, devices, endpoints and pending requests, says what it dropped, and refuses a
/// file shorter than a block header.
@Suite("Hostile captures")
struct HostileCaptureTests {
    static let interface = PcapngBlock.interfaceDescription(linkType: 220)
    static func packet(_ header: USBMonHeader, interface: UInt32 = 0, data: [UInt8] = []) -> [UInt8] {
        PcapngBlock.enhancedPacket(interface: interface, ticks: 1, packet: CaptureBytes.usbmon(header, data: data))
    }

    @Test("A file shorter than a block header is an error at byte 0, not an empty capture", arguments: [4, 6, 7, 8, 12, 27])
    func shorterThanABlockHeader(length: Int) throws {
        let bytes = Array(PcapngBlock.sectionHeader().prefix(length))
        #expect {
            try USBCaptureSummary(bytes: bytes, name: "short.pcapng")
        } throws: { error in
            let e = error as? USBCaptureError
            return e?.offset == 0 && e?.reason.contains("section header block is cut short") == true
        }
        #expect(throws: USBCaptureError.self) { try USBCapture(bytes: bytes, name: "short.pcapng") }
    }

    @Test("Interfaces past the limit are not kept; their packets are skipped and counted; the others read")
    func interfacesPastTheLimit() throws {
        let count = USBCaptureLimits.standard.interfaces + 904
        var bytes = PcapngBlock.sectionHeader()
        for _ in 0..<count { bytes += Self.interface }
        bytes += Self.packet(CaptureBytes.submit(1, endpoint: 0x81, length: 8), interface: 0)
        bytes += Self.packet(CaptureBytes.complete(1, endpoint: 0x81, length: 2), interface: UInt32(count - 1), data: [1, 2])
        bytes += Self.packet(CaptureBytes.complete(1, endpoint: 0x81, length: 2), interface: 1, data: [3, 4])
        let capture = try USBCapture(bytes: bytes, name: "interfaces.pcapng", chunkSize: 4096)
        #expect(capture.drops.interfaces == 904 && capture.drops.packets == 1)
        #expect(capture.dropped == ["904 interfaces past the 4096 a section may have, and the 1 packet on them, were skipped"])
        let t = try #require(capture.transfers(of: capture.devices[0]).first)
        #expect(t.data == [3, 4])
        let summary = try USBCaptureSummary(bytes: bytes, name: "interfaces.pcapng")
        #expect(summary.drops.sentences == capture.dropped && summary.events == 2)
        // A packet of an interface never described is still an error.
        #expect(throws: USBCaptureError.self) {
            try USBCapture(bytes: bytes + Self.packet(CaptureBytes.submit(2, endpoint: 0x81, length: 8), interface: UInt32(count)), name: "x")
        }
        // A new section starts counting again.
        let again = try USBCapture(bytes: bytes + PcapngBlock.sectionHeader() + Self.interface, name: "again")
        #expect(again.drops.interfaces == 904)
    }

    static let tiny = USBCaptureLimits(interfaces: 2, devices: 2, endpoints: 3, pendingRequests: 3)

    @Test("Pending requests past the limit stay unpaired, and are counted: in the capture and in the summary's descriptor requests")
    func pendingPastTheLimit() throws {
        let getDevice = USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: 18)
        let descriptor: [UInt8] = [18, 1, 0, 2, 0, 0, 0, 64, 0x09, 0x12, 0x01, 0x00, 0, 1, 1, 2, 3, 1]
        var packets: [[UInt8]] = []
        for id in 1...5 as ClosedRange<UInt64> {
            packets.append(CaptureBytes.usbmon(CaptureBytes.submit(id, endpoint: 0x80, kind: .control, length: 18, setup: getDevice)))
        }
        // The last one submitted answers first: it was not tracked, so nothing names the device.
        packets.append(CaptureBytes.usbmon(CaptureBytes.complete(5, endpoint: 0x80, kind: .control, length: 18), data: descriptor))
        for id in 1...3 as ClosedRange<UInt64> {
            packets.append(CaptureBytes.usbmon(CaptureBytes.complete(id, endpoint: 0x80, kind: .control, status: -32, length: 0)))
        }
        let bytes = CaptureBytes.pcapng(packets)
        let capture = try USBCapture(bytes: bytes, name: "pending", limits: Self.tiny)
        #expect(capture.drops.requests == 2)
        #expect(capture.dropped == ["2 submissions made while 3 were waiting for their completion were left unpaired"])
        let transfers = capture.transfers(of: capture.devices[0])
        #expect(transfers.map(\.status) == [-32, -32, -32, nil, nil])
        #expect(capture.devices[0].vendor == nil)
        let summary = try USBCaptureSummary(bytes: bytes, name: "pending", limits: Self.tiny)
        #expect(summary.drops.requests == 2 && summary.devices[0].device.vendor == nil)
        // Within the standard limits the same file pairs everything and names the device.
        let whole = try USBCapture(bytes: bytes, name: "pending")
        #expect(whole.drops.isEmpty && whole.devices[0].vendor == 0x1209)
    }

    @Test("Devices and endpoints past the limit are skipped, and their events counted")
    func devicesAndEndpointsPastTheLimit() throws {
        var packets: [[UInt8]] = []
        for device in 1...4 as ClosedRange<UInt8> {
            packets.append(CaptureBytes.usbmon(CaptureBytes.submit(UInt64(device), endpoint: 0x81, device: device, length: 8)))
            packets.append(CaptureBytes.usbmon(CaptureBytes.submit(UInt64(device) + 100, endpoint: 0x82, device: device, length: 8)))
        }
        let bytes = CaptureBytes.pcapng(packets)
        let capture = try USBCapture(bytes: bytes, name: "devices", limits: Self.tiny)
        #expect(capture.devices.map(\.address) == [1, 2])
        #expect(capture.drops.events == 4)
        let summary = try USBCaptureSummary(bytes: bytes, name: "devices", limits: Self.tiny)
        #expect(summary.devices.map(\.device.address) == [1, 2])
        #expect(summary.devices.map { $0.endpoints.count } == [2, 1])
        #expect(summary.drops.events == 5)
        #expect(summary.drops.sentences == ["5 events of devices past the first 2 (or endpoints past the first 3) were skipped"])
    }

    @Test("Real shapes stay far from the limits: nothing is dropped from the package's own conversation")
    func nothingDroppedNormally() throws {
        let capture = try USBCapture(bytes: CaptureBytes.pcapng(CaptureBytes.threeTransfers), name: "three")
        #expect(capture.dropped.isEmpty && capture.drops.isEmpty)
    }
}
