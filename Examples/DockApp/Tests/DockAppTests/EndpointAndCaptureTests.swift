import AccessoryKit
import AccessoryTesting
import Foundation
import Testing

/// The public names of CAPTURE-API §1 (every endpoint of a session) and §2 (reading a
/// capture), used as a user's package uses them: a session's one-transfer calls on a
/// simulated reader, recorded with `capturePath`, and the capture read back.
@Test func oneTransferCallsAreRecordedAndReadBack() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dockapp-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let path = folder.appendingPathComponent("reader.pcapng").path

    let declared: [AccessoryEndpoint] = [
        AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 512),
        AccessoryEndpoint(address: 0x81, kind: .bulk, maxPacketSize: 512),
        AccessoryEndpoint(address: 0x83, kind: .interrupt, maxPacketSize: 8),
    ]
    let reader = SimulatedAccessory(
        vendor: 0x1209, product: 0x0042, serial: "FP1",
        interfaces: [SimulatedInterface(protocol: "com.example.reader", endpoints: declared)])
    let usb = SimulatedUSB()
    await usb.plug(reader)
    try await withAccessoryManager(configuration: .init(capturePath: path), usb: usb) { manager in
        let accessory = try #require(await manager.connectedAccessories.first)
        try await manager.withSession(to: accessory, protocol: "com.example.reader") { session in
            let endpoints: [AccessoryEndpoint] = session.endpoints
            #expect(endpoints == declared)
            let kinds = endpoints.map { (endpoint: AccessoryEndpoint) -> String in
                switch endpoint.kind {
                case .bulk: "bulk \(endpoint.address) \(endpoint.maxPacketSize)"
                case .interrupt: "interrupt \(endpoint.address) \(endpoint.maxPacketSize)"
                }
            }
            #expect(kinds == ["bulk 1 512", "bulk 129 512", "interrupt 131 8"])
            try await session.transferOut(0x01, [0xa7, 0xfe], timeout: .seconds(1))
            let answer: [UInt8] = try await session.transferIn(0x81, length: 64, timeout: .seconds(1))
            #expect(answer == [0xa7, 0xfe])
            try await session.clearHalt(0x81)
            try await session.selectAlternateSetting(0)
        }
        // The reader knows no vendor request: it stalls, and the capture shows the setup.
        await #expect(throws: AccessoryError.self) {
            try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 7, value: 0x1234, index: 2), length: 4)
        }
    }

    let capture = try USBCapture(path: path)
    let devices: [USBCapture.Device] = capture.devices
    let device = try #require(devices.first)
    let bus: Int = device.bus
    let address: Int = device.address
    let ids: (UInt16?, UInt16?) = (device.vendor, device.product)
    #expect(bus >= 1 && address >= 1)
    #expect(ids.0 == nil || ids.0 == 0x1209)
    let transfers: [USBCapture.Transfer] = capture.transfers(of: device)
    let out = try #require(transfers.first { $0.kind == .bulk && $0.endpoint == 0x01 })
    #expect(out.data == [0xa7, 0xfe] && out.status == 0 && out.requestedLength == 2 && out.setup == nil)
    let back = try #require(transfers.first { $0.kind == .bulk && $0.endpoint == 0x81 })
    #expect(back.data == [0xa7, 0xfe] && back.requestedLength == 64)
    let submitted: Duration = back.submitted
    let completed: Duration? = back.completed
    #expect(completed.map { $0 >= submitted } == true)
    let vendor = try #require(transfers.first { $0.kind == .control && $0.setup?.request == 7 })
    let setup: USBCapture.Setup = try #require(vendor.setup)
    #expect(setup.requestType & 0xe0 == 0xc0, "IN, vendor")
    #expect(setup.value == 0x1234 && setup.index == 2 && setup.length == 4)
    #expect(vendor.endpoint == 0x80 && vendor.status == -32, "a stall is -EPIPE")
    let kinds = Set(transfers.map { (transfer: USBCapture.Transfer) -> String in
        switch transfer.kind {
        case .control: "control"
        case .bulk: "bulk"
        case .interrupt: "interrupt"
        case .isochronous: "isochronous"
        }
    })
    #expect(kinds == ["control", "bulk"])

    let missing = folder.appendingPathComponent("missing.pcapng").path
    do throws(USBCaptureError) {
        _ = try USBCapture(path: missing)
        Issue.record("a missing capture was read")
    } catch {
        let failure: USBCaptureError = error
        #expect(failure.file == missing && !failure.reason.isEmpty && failure.offset == nil)
        #expect(failure.description.contains(missing))
    }
}
