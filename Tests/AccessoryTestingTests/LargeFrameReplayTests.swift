import AccessoryCapture
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
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
}
