import AccessoryCapture
import AccessoryCore
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// A capture recorded through libusb, where a writer thread writes the records of each
    /// pass of the event loop and only then hands the pass's completions on.
    @Suite("Capture through libusb")
    struct CaptureThroughLibUSB {
        @Test("Every transfer the caller has seen is already in the file, with its data, when the call returns")
        func aSeenCompletionIsInTheFile() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("seen.pcapng").path
            let (manager, log) = try await HardwareTests.manager { $0.capturePath = path }
            let device = try plugged.plug("1209:00f9:CAPW:org.example.loopback")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            do {
                try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session throws(AccessoryError) in
                    for round in 0..<40 {
                        let bytes: [UInt8] = (0..<(1 + round * 97)).map { (i: Int) -> UInt8 in UInt8(truncatingIfNeeded: i &* 31 &+ round) }
                        try await session.transferOut(0x01, bytes, timeout: .seconds(5))
                        let echoed = try await session.transferIn(0x81, length: 4096, timeout: .seconds(5))
                        // Read at once, while the capture is still being written.
                        let transfers = Self.completedBulk(in: path)
                        let outs = transfers.filter { $0.endpoint == 0x01 }
                        let ins = transfers.filter { $0.endpoint == 0x81 }
                        #expect(outs.count == round + 1, "round \(round): \(outs.count) bulk OUT completions in the file")
                        #expect(ins.count == round + 1, "round \(round): \(ins.count) bulk IN completions in the file")
                        #expect(outs.last?.data == bytes)
                        #expect(ins.last?.data == echoed)
                        #expect(echoed == bytes)
                    }
                }
            } catch {
                await manager.shutdown()
                throw error
            }
            await manager.shutdown()
            #expect(manager.captureError == nil)
        }

        /// The completed bulk transfers the capture at `path` holds now.
        static func completedBulk(in path: String) -> [USBCapture.Transfer] {
            guard let capture = try? USBCapture(path: path) else { return [] }
            var all: [USBCapture.Transfer] = []
            for device in capture.devices { all += capture.transfers(of: device) }
            return all.filter { $0.kind == .bulk && $0.status == 0 }
        }
    }
}
