import AccessoryCapture
import AccessoryCore
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// A real capture with one transfer's data cut, as a snap length cuts it (`tshark -s`,
/// usbmon's own cap), in a copy the test makes: the cut is named, never replayed as whole.
@Suite("Cut captures replayed", .timeLimit(.minutes(2)))
struct CutCaptureReplayTests {
    /// The synaptics capture with transfer `index` of its reader cut to `keep` bytes, read
    /// back from a temporary copy.
    static func cutCapture(at index: (([USBCapture.Transfer]) -> Int?), keep: Int) throws
        -> (original: [USBCapture.Transfer], cut: USBCapture, device: USBCapture.Device, index: Int, recording: String)
    {
        let (capture, device, recording) = try RecordedDeviceReplayTests.load("synaptics")
        let transfers = capture.transfers(of: device)
        let i = try #require(index(transfers))
        let path = SharedFolder.captures.appendingPathComponent("synaptics/custom.pcapng").path
        let bytes = try CaptureCutter.cut(path: path, device: device, transfer: i, keep: keep)
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString).pcapng")
        defer { try? FileManager.default.removeItem(at: copy) }
        try Data(bytes).write(to: copy)
        return (transfers, try USBCapture(path: copy.path), device, i, recording)
    }

    @Test("A bulk IN whose data was cut fails with .io naming its index and both sizes, and is a divergence", .needsCaptures)
    func cutIn() async throws {
        let (original, cut, device, index, recording) = try Self.cutCapture(
            at: { $0.firstIndex { $0.kind == .bulk && $0.isIn && $0.status == 0 && $0.data.count > 35 } }, keep: 35)
        let whole = original[index].data.count
        let transfers = cut.transfers(of: device)
        #expect(transfers[index].data == Array(original[index].data.prefix(35)))
        #expect(transfers[index].length == whole && transfers[index].isCut)
        #expect(transfers.filter(\.isCut).count == 1)

        let usb = SimulatedUSB()
        let accessory = try SimulatedAccessory(replaying: cut, device: device, recording: recording)
        let reader = await usb.plug(accessory)
        let problems = try await RecordedDeviceReplayTests.playHost(original, usb: usb, vendor: accessory.vendor, product: accessory.product)
        #expect(problems.count == 1, "\(problems)")
        let problem = try #require(problems.first)
        #expect(problem.contains("transfer \(index) of the capture") && problem.contains("35 of the \(whole) bytes"), "\(problem)")
        let report = await usb.replayReport(of: reader)
        #expect(report.divergences.count == 1, "\(report)")
        #expect(report.divergences.first?.contains("transfer \(index) of the capture (bulk IN 0x81) was cut by the capture: it kept 35 of the \(whole) bytes") == true, "\(report)")
        let needed = original.filter { !RecordedDeviceReplayTests.isOptional($0) && $0.kind != .isochronous }.count
        #expect(report.matched == needed - 1, "\(report)")
        #expect(report.unconsumed == 0, "\(report)")
    }

    @Test("The error a cut IN throws is .io", .needsCaptures)
    func cutInIsIO() async throws {
        let (original, cut, device, index, recording) = try Self.cutCapture(
            at: { $0.firstIndex { $0.kind == .bulk && $0.isIn && $0.status == 0 && $0.data.count > 35 } }, keep: 35)
        let usb = SimulatedUSB()
        let accessory = try SimulatedAccessory(replaying: cut, device: device, recording: recording)
        await usb.plug(accessory)
        let table = ProtocolTable(rules: [.device(vendor: accessory.vendor, product: accessory.product, speaks: RecordedDeviceReplayTests.protocolName)])
        try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let reader = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: reader, protocol: RecordedDeviceReplayTests.protocolName) { session in
                // Play the bulk endpoints in order up to the cut IN (control needs no part in it).
                for t in original[..<index] where t.kind == .bulk && !RecordedDeviceReplayTests.isOptional(t) {
                    if t.isIn { _ = try? await session.transferIn(t.endpoint, length: t.requestedLength) } else { try? await session.transferOut(t.endpoint, t.data) }
                }
                await #expect {
                    _ = try await session.transferIn(original[index].endpoint, length: original[index].requestedLength)
                } throws: { error in
                    (error as? AccessoryError)?.code == .io && "\(error)".contains("transfer \(index) of the capture")
                }
            }
        }
    }

    @Test("A bulk OUT whose data was cut matches on the bytes kept: no false divergence", .needsCaptures)
    func cutOut() async throws {
        let (original, cut, device, index, recording) = try Self.cutCapture(
            at: { $0.firstIndex { $0.kind == .bulk && !$0.isIn && $0.status == 0 && $0.data.count > 20 } }, keep: 20)
        let transfers = cut.transfers(of: device)
        #expect(transfers[index].data == Array(original[index].data.prefix(20)))
        #expect(transfers[index].length == original[index].data.count && transfers[index].isCut)

        let usb = SimulatedUSB()
        let accessory = try SimulatedAccessory(replaying: cut, device: device, recording: recording)
        let reader = await usb.plug(accessory)
        let problems = try await RecordedDeviceReplayTests.playHost(original, usb: usb, vendor: accessory.vendor, product: accessory.product)
        #expect(problems.isEmpty, "\(problems)")
        let report = await usb.replayReport(of: reader)
        #expect(report.isComplete, "\(report)")
        let needed = original.filter { !RecordedDeviceReplayTests.isOptional($0) && $0.kind != .isochronous }.count
        #expect(report.matched == needed, "\(report)")
    }

    @Test("A cut bulk OUT still diverges on a wrong kept byte, or on another length", .needsCaptures)
    func cutOutStillChecked() async throws {
        let (original, cut, device, index, recording) = try Self.cutCapture(
            at: { $0.firstIndex { $0.kind == .bulk && !$0.isIn && $0.status == 0 && $0.data.count > 20 } }, keep: 20)
        for (name, change) in [("kept byte", { (d: inout [UInt8]) in d[3] ^= 0x01 }), ("length", { (d: inout [UInt8]) in d.removeLast() })] {
            var sent = original
            change(&sent[index].data)
            let usb = SimulatedUSB()
            let accessory = try SimulatedAccessory(replaying: cut, device: device, recording: recording)
            let reader = await usb.plug(accessory)
            _ = try await RecordedDeviceReplayTests.playHost(sent, usb: usb, vendor: accessory.vendor, product: accessory.product)
            let report = await usb.replayReport(of: reader)
            #expect(report.divergences.count == 1, "\(name): \(report)")
            #expect(report.divergences.first?.contains("transfer \(index) of the capture") == true, "\(name): \(report)")
        }
    }
}
