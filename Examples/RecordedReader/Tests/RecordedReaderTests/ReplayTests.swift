import AccessoryKit
import AccessoryTesting
import Foundation
import RecordedReader
import Synchronization
import Testing

/// The app's `EchoClient` against a recording of the real conversation: `Fixtures/echo.pcapng`,
/// made by `accessoryctl open --capture` on a loopback accessory (see `record-fixture.sh`).
/// No hardware, no simulator, no umockdev: the capture holds the device's descriptors too.
@Suite("Replaying Fixtures/echo.pcapng")
struct ReplayTests {
    /// The fixture, found from this file's path (so `swift test` works from any folder).
    static let fixture = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/echo.pcapng").path
    /// What the recording sent (record-fixture.sh's MESSAGE).
    static let recordedMessage = "hello from RecordedReader"

    /// The capture and its loopback accessory.
    static func load() throws -> (USBCapture, USBCapture.Device) {
        let capture = try USBCapture(path: fixture)
        let device = try #require(capture.devices.first { $0.vendor == 0x1209 && $0.product == 0x0001 })
        return (capture, device)
    }

    @Test("The recorded message gets the recorded echo; every recorded transfer is matched")
    func recordedEcho() async throws {
        let (capture, device) = try Self.load()
        let recordedAnswer = try #require(capture.transfers(of: device).first { $0.kind == .bulk && $0.endpoint == 0x81 && $0.status == 0 })
        let usb = SimulatedUSB()
        let pacing: ReplayPacing = .immediate
        // The capture holds the descriptors, so no umockdev recording is needed.
        let loopback = await usb.plug(try SimulatedAccessory(replaying: capture, device: device, recording: nil, pacing: pacing))
        let answer = try await withAccessoryManager(usb: usb) { manager in
            // The interface's name comes from the recorded string descriptors: no ProtocolTable rule.
            let accessory = try #require(await manager.connectedAccessories.first)
            #expect(accessory.protocolStrings == [EchoClient.protocolName])
            return try await EchoClient(manager: manager, accessory: accessory).send(Array(Self.recordedMessage.utf8))
        }
        #expect(answer == recordedAnswer.data)
        #expect(String(decoding: answer, as: UTF8.self) == Self.recordedMessage)

        let report: SimulatedReplayReport = await usb.replayReport(of: loopback)
        #expect(report.divergences.isEmpty, "\(report)")
        #expect(report.unconsumed == 0, "\(report)")
        #expect(report.matched == 2, "one bulk OUT, one bulk IN: \(report)")
        #expect(report.isComplete)
    }

    @Test("Another message diverges: the call throws, naming the transfer, its endpoint and the bytes")
    func anotherMessageDiverges() async throws {
        let (capture, device) = try Self.load()
        let index = try #require(capture.transfers(of: device).firstIndex { $0.kind == .bulk && $0.endpoint == 0x01 && $0.status == 0 })
        let usb = SimulatedUSB()
        let loopback = await usb.plug(try SimulatedAccessory(replaying: capture, device: device))
        let failure = try await withAccessoryManager(usb: usb) { manager -> AccessoryError? in
            let accessory = try #require(await manager.connectedAccessories.first)
            do throws(AccessoryError) {
                _ = try await EchoClient(manager: manager, accessory: accessory).send("hello from RecordedWriter")
                return nil
            } catch {
                return error
            }
        }
        let error = try #require(failure, "the OUT transfer that differs from the recording fails")
        #expect(error.code == .io)
        // "hello from Recorded" is the same 19 bytes; then "Reader" was recorded, "Writer" sent.
        #expect(error.message.contains("transfer \(index) of the capture (bulk OUT 0x01) diverges"), "\(error)")
        #expect(error.message.contains("at byte 19"), "\(error)")
        #expect(error.message.contains("expected 52 65 61 64 65 72, got 57 72 69 74 65 72"), "\(error)")

        let report = await usb.replayReport(of: loopback)
        #expect(report.divergences == [error.message], "\(report)")
        #expect(report.matched == 0, "\(report)")
        #expect(report.unconsumed == 1, "the recorded echo nobody read: \(report)")
        #expect(!report.isComplete)
    }

    @Test("Paced as recorded, the echo waits for the virtual clock")
    func pacedAsRecorded() async throws {
        let (capture, device) = try Self.load()
        let usb = SimulatedUSB()
        let loopback = await usb.plug(try SimulatedAccessory(replaying: capture, device: device, pacing: ReplayPacing.recorded))
        try await withAccessoryManager(usb: usb) { manager in
            let client = EchoClient(manager: manager, accessory: try #require(await manager.connectedAccessories.first))
            let done = Mutex(false)
            let echo = Task {
                let answer = try await client.send(Self.recordedMessage)
                done.withLock { $0 = true }
                return answer
            }
            await usb.advance(by: .zero)  // the client runs up to its first paced transfer
            #expect(!done.withLock { $0 }, "no answer before the recorded durations pass")
            for _ in 0..<1000 where !done.withLock({ $0 }) {
                await usb.advance(by: .milliseconds(1))
            }
            #expect(try await echo.value == Self.recordedMessage)
        }
        #expect(await usb.replayReport(of: loopback).isComplete)
    }
}
