import AccessoryKit
import AccessoryTesting
import Foundation
import RecordedReader
import Testing

/// A device whose interface carries no protocol string, as most real devices' do:
/// `Fixtures/noname.pcapng`, made by `accessoryctl open --interface 0 --capture` on
/// accessory-sim's loopback plugged with `noname` (see `record-fixture.sh`).
@Suite("Replaying Fixtures/noname.pcapng: a device with no interface strings")
struct NamelessReplayTests {
    static let fixture = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/noname.pcapng").path
    /// What the recording sent (record-fixture.sh's second message).
    static let recordedMessage = "hello from a nameless reader"

    static func plug() async throws -> (SimulatedUSB, SimulatedDevice) {
        let capture = try USBCapture(path: fixture)
        let device = try #require(capture.devices.first { $0.vendor == 0x1209 && $0.product == 0x00d1 })
        let usb = SimulatedUSB()
        return (usb, await usb.plug(try SimulatedAccessory(replaying: capture, device: device)))
    }

    @Test("It speaks no protocol, opens by interface number, and gets the recorded echo")
    func byInterfaceNumber() async throws {
        let (usb, reader) = try await Self.plug()
        let answer = try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            #expect(accessory.protocolStrings.isEmpty, "the recorded interface has no string")
            return try await EchoClient(manager: manager, accessory: accessory, interface: 0).send(Self.recordedMessage)
        }
        #expect(answer == Self.recordedMessage)
        let report = await usb.replayReport(of: reader)
        #expect(report.isComplete, "\(report)")
        #expect(report.matched == 2, "\(report)")
    }

    @Test("A protocol rule names it, and it opens by that protocol")
    func byProtocolRule() async throws {
        let (usb, reader) = try await Self.plug()
        let table = ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x00d1, speaks: EchoClient.protocolName)])
        let answer = try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            #expect(accessory.protocolStrings == [EchoClient.protocolName])
            return try await EchoClient(manager: manager, accessory: accessory).send(Self.recordedMessage)
        }
        #expect(answer == Self.recordedMessage)
        #expect(await usb.replayReport(of: reader).isComplete)
    }
}
