import AccessoryCapture
import AccessoryCore
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// The four real fingerprint readers of `../shared/captures`, replayed: the test plays the
/// host's side of each recording through the public API (one task per endpoint, control
/// requests through the manager), and every recorded transfer the host completed must be
/// answered as recorded, with no divergence and nothing unconsumed.
@Suite("Recorded devices replayed", .timeLimit(.minutes(2)))
struct RecordedDeviceReplayTests {
    /// Each shared capture's reader, by folder: its capture file and its vendor ID.
    static let readers: [(folder: String, file: String, vendor: UInt16)] = [
        ("synaptics", "custom.pcapng", 0x06cb),
        ("egis0570", "capture.pcapng", 0x1c7a),
        ("fpcmoc", "custom.pcapng", 0x10a5),
        ("elan-cobo", "capture.pcapng", 0x04f3),
    ]
    static let protocolName = "com.example.recorded"

    /// The capture, its reader, and the umockdev file beside it.
    static func load(_ folder: String) throws -> (USBCapture, USBCapture.Device, String) {
        let reader = try #require(readers.first { $0.folder == folder })
        let dir = SharedFolder.captures.appendingPathComponent(folder)
        let capture = try USBCapture(path: dir.appendingPathComponent(reader.file).path)
        let device = try #require(capture.devices.first { $0.vendor == reader.vendor })
        return (capture, device, dir.appendingPathComponent("device").path)
    }

    /// Whether the host may leave a recorded transfer out (cancelled, never completed, or a
    /// standard request the replay answers from the descriptors).
    static func isOptional(_ t: USBCapture.Transfer) -> Bool {
        if t.status == nil || t.status == -2 || t.status == -104 { return true }
        if let s = t.setup, s.requestType & 0x60 == 0, [1, 6, 9, 11].contains(s.request) { return true }
        return false
    }

    /// The control request of a recorded setup.
    static func request(_ s: USBCapture.Setup) throws -> ControlRequest {
        let kind = try #require(ControlRequest.Kind(rawValue: s.requestType >> 5 & 3))
        let recipient = try #require(ControlRequest.Recipient(rawValue: s.requestType & 0x1f))
        return ControlRequest(kind, recipient: recipient, request: s.request, value: s.value, index: s.index)
    }

    /// Plays the host's side of `transfers` (as recorded, `mutate` aside) against `usb`'s
    /// replayed reader: one task per endpoint. Returns what each endpoint got wrong.
    static func playHost(
        _ transfers: [USBCapture.Transfer], usb: SimulatedUSB, vendor: UInt16, product: UInt16
    ) async throws -> [String] {
        let table = ProtocolTable(rules: [.device(vendor: vendor, product: product, speaks: protocolName)])
        return try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            return try await manager.withSession(to: accessory, protocol: protocolName) { session in
                let needed = transfers.enumerated().filter { !isOptional($0.element) }
                let endpoints = Set(needed.map { $0.element.kind == .control ? 0x100 : Int($0.element.endpoint) })
                return try await withThrowingTaskGroup(of: [String].self) { group in
                    for key in endpoints {
                        let mine = needed.filter { ($0.element.kind == .control ? 0x100 : Int($0.element.endpoint)) == key }
                        group.addTask {
                            var problems: [String] = []
                            for (index, t) in mine {
                                do {
                                    let got: [UInt8]
                                    if let setup = t.setup {
                                        let request = try request(setup)
                                        if t.isIn {
                                            got = try await manager.controlTransfer(from: accessory, request, length: Int(setup.length))
                                        } else {
                                            try await manager.controlTransfer(to: accessory, request, data: t.data)
                                            got = []
                                        }
                                    } else if t.isIn {
                                        got = try await session.transferIn(t.endpoint, length: t.requestedLength)
                                    } else {
                                        try await session.transferOut(t.endpoint, t.data)
                                        got = []
                                    }
                                    if t.status != 0 && t.status != -121 { problems.append("transfer \(index): completed; recorded status \(t.status!)") }
                                    if t.isIn && got != t.data { problems.append("transfer \(index): got \(got.count) bytes, recorded \(t.data.count)") }
                                } catch {
                                    if t.status == -32, let e = error as? AccessoryError, e.code == .stall { continue }
                                    problems.append("transfer \(index): \(error)")
                                }
                            }
                            return problems
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
        }
    }

    @Test("Every shared reader replays completely: each completed transfer answered as recorded", .needsCaptures, arguments: readers.map(\.folder))
    func replaysCompletely(folder: String) async throws {
        let (capture, device, recording) = try Self.load(folder)
        let accessory = try SimulatedAccessory(replaying: capture, device: device, recording: recording)
        let usb = SimulatedUSB()
        let reader = await usb.plug(accessory)
        let transfers = capture.transfers(of: device)
        let problems = try await Self.playHost(transfers, usb: usb, vendor: accessory.vendor, product: accessory.product)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        let report = await usb.replayReport(of: reader)
        #expect(report.divergences.isEmpty, "\(report)")
        #expect(report.unconsumed == 0, "\(report)")
        let needed = transfers.filter { !Self.isOptional($0) && $0.kind != .isochronous }.count
        #expect(report.matched == needed, "\(report)")
        #expect(needed > 20)
    }

    @Test("A flipped byte in a bulk OUT is reported with its transfer index, endpoint and bytes", .needsCaptures)
    func flippedByte() async throws {
        let (capture, device, recording) = try Self.load("synaptics")
        var transfers = capture.transfers(of: device)
        let index = try #require(transfers.firstIndex { $0.kind == .bulk && !$0.isIn && $0.data.count > 2 })
        let original = transfers[index].data
        transfers[index].data[1] ^= 0x40
        let usb = SimulatedUSB()
        let accessory = try SimulatedAccessory(replaying: capture, device: device, recording: recording)
        let reader = await usb.plug(accessory)
        let problems = try await Self.playHost(transfers, usb: usb, vendor: accessory.vendor, product: accessory.product)
        let report = await usb.replayReport(of: reader)
        try #require(report.divergences.count == 1, "\(report)")
        let message = report.divergences[0]
        #expect(message.contains("transfer \(index) of the capture"))
        #expect(message.contains("bulk OUT 0x01"))
        #expect(message.contains("at byte 1"))
        let hex = { (b: UInt8) in String(format: "%02x", b) }
        #expect(message.contains("expected \(hex(original[1]))"), "\(message)")
        #expect(message.contains("got \(hex(original[1] ^ 0x40))"), "\(message)")
        // The host saw it as the failure of that one transfer, with the same message.
        #expect(problems.count == 1 && problems.first?.contains("transfer \(index) of the capture") == true, "\(problems)")
        #expect(report.matched == transfers.filter { !Self.isOptional($0) }.count - 1)
    }

    @Test("Without the umockdev file, a capture with no configuration descriptor says what is missing", .needsCaptures)
    func missingDescriptor() throws {
        let (capture, device, _) = try Self.load("egis0570")
        #expect {
            try SimulatedAccessory(replaying: capture, device: device)
        } throws: { error in
            "\(error)".contains("no device descriptor and no configuration descriptor") && "\(error)".contains("bus 1 address 5")
                && "\(error)".contains("no umockdev recording was given")
        }
    }

    @Test("A session on a reader with only a bulk IN reads it; its write stream says there is no OUT endpoint", .needsCaptures)
    func inOnlyInterface() async throws {
        let (capture, device, recording) = try Self.load("fpcmoc")
        let accessory = try SimulatedAccessory(replaying: capture, device: device, recording: recording)
        let usb = SimulatedUSB()
        await usb.plug(accessory)
        let table = ProtocolTable(rules: [.device(vendor: accessory.vendor, product: accessory.product, speaks: Self.protocolName)])
        try await withAccessoryManager(configuration: .init(protocolTable: table), usb: usb) { manager in
            let reader = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: reader, protocol: Self.protocolName) { session in
                #expect(session.endpoints == [AccessoryEndpoint(address: 0x81, kind: .bulk, maxPacketSize: 64)])
                await #expect {
                    try await session.write([1, 2, 3])
                    try await session.flush()
                } throws: { error in
                    (error as? AccessoryError)?.code == .notFound && "\(error)".contains("has no OUT endpoint")
                }
            }
        }
    }
}
