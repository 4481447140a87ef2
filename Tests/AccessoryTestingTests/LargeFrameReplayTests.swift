import AccessoryCapture
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// The shape of libfprint's `uru4000` readers, which read each 111,424-byte frame in one bulk
/// IN: the package's own capture `usb-captures/large-frame.pcapng` (made by
/// `make-large-frame.py` beside it) replays through the public API, every transfer answered
/// as recorded.
@Suite("A frame larger than 64 KiB replayed", .timeLimit(.minutes(1)))
struct LargeFrameReplayTests {
    static let path = Fixtures.path("usb-captures/large-frame.pcapng")

    @Test("A 111,424-byte bulk IN frame replays in one transferIn; every needed transfer matches")
    func largeFrameReplaysCompletely() async throws {
        let capture = try USBCapture(path: Self.path)
        let device = try #require(capture.devices.first)
        let transfers = capture.transfers(of: device)
        let frame = try #require(transfers.first { $0.kind == .bulk && $0.isIn })
        #expect(frame.requestedLength == 111_424 && frame.data.count == 111_424)

        let accessory = try SimulatedAccessory(replaying: capture, device: device)
        let usb = SimulatedUSB()
        let reader = await usb.plug(accessory)
        let problems = try await RecordedDeviceReplayTests.playHost(transfers, usb: usb, vendor: accessory.vendor, product: accessory.product)
        #expect(problems.isEmpty, "\(problems)")
        let report = await usb.replayReport(of: reader)
        #expect(report.isComplete, "\(report)")
        let needed = transfers.filter { !RecordedDeviceReplayTests.isOptional($0) }.count
        #expect(report.matched == needed && needed == 4, "\(report)")
    }

    @Test("The package's own frame, cut by a snap length to 35 bytes, is named: .io and a divergence, never replayed as whole")
    func cutFrameIsNamed() async throws {
        let capture = try USBCapture(path: Self.path)
        let device = try #require(capture.devices.first)
        let transfers = capture.transfers(of: device)
        let index = try #require(transfers.firstIndex { $0.kind == .bulk && $0.isIn && $0.status == 0 })
        let bytes = try CaptureCutter.cut(path: Self.path, device: device, transfer: index, keep: 35)
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("cut-frame-\(UUID().uuidString).pcapng")
        defer { try? FileManager.default.removeItem(at: copy) }
        try Data(bytes).write(to: copy)
        let cut = try USBCapture(path: copy.path)
        #expect(cut.transfers(of: device)[index].isCut && cut.transfers(of: device)[index].length == 111_424)

        let accessory = try SimulatedAccessory(replaying: cut, device: device)
        let usb = SimulatedUSB()
        let reader = await usb.plug(accessory)
        let problems = try await RecordedDeviceReplayTests.playHost(transfers, usb: usb, vendor: accessory.vendor, product: accessory.product)
        #expect(problems.count == 1 && problems.first?.contains("35 of the 111424 bytes") == true, "\(problems)")
        let report = await usb.replayReport(of: reader)
        #expect(report.divergences.count == 1, "\(report)")
    }
}
