import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// Control transfers through libusb's asynchronous API, and re-enumeration links, against
    /// accessory-sim.
    @Suite("Control transfers and links")
    struct ControlAndLinks {
        @Test func controlRequestsThroughLibusb() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:000c:CTRL")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))

            // GET_DESCRIPTOR(DEVICE): 18 bytes, IDs little-endian at 8...11.
            let descriptor = try await manager.controlTransfer(
                from: accessory, ControlRequest(.standard, request: 6, value: 0x0100), length: 64)
            #expect(descriptor.count == 18)
            #expect(Array(descriptor.prefix(2)) == [18, 1])
            #expect(Array(descriptor[8..<12]) == [0x09, 0x12, 0x0c, 0x00])
            // Asking for fewer bytes gets fewer.
            #expect(try await manager.controlTransfer(from: accessory, ControlRequest(.standard, request: 6, value: 0x0100), length: 4).count == 4)
            // The loopback knows no vendor requests: STALL, and it stays usable.
            do {
                _ = try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 51), length: 2)
                Issue.record("a vendor request to the loopback should stall")
            } catch {
                #expect(error.code == .stall)
                #expect(error.message.contains("refused vendor request 51"), "\(error.message)")
            }
            // An endpoint-recipient request (CLEAR_FEATURE ENDPOINT_HALT) claims the endpoint's
            // interface; with a session open, it goes through the session's claim.
            try await manager.controlTransfer(to: accessory, ControlRequest(.standard, recipient: .endpoint, request: 1, index: 0x81))
            let echoed = try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session throws(AccessoryError) in
                try await manager.controlTransfer(to: accessory, ControlRequest(.standard, recipient: .endpoint, request: 1, index: 0x81))
                try await session.write(Array("after".utf8))
                return try await session.read(exactly: 5)
            }
            #expect(echoed == Array("after".utf8))
            #expect(await manager.connectedAccessories.contains(accessory))
            await manager.shutdown()
        }

        @Test func aCancelledControlTransferEndsWithCancelled() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:000d:CANCEL")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            let task = Task { () async -> AccessoryError.Code? in
                do {
                    // Cancelled before it runs: it must not be sent at all, or must end cancelled.
                    withUnsafeCurrentTask { $0?.cancel() }
                    _ = try await manager.controlTransfer(from: accessory, ControlRequest(.standard, request: 6, value: 0x0100), length: 18)
                    return nil
                } catch {
                    return (error as? AccessoryError)?.code
                }
            }
            #expect(await task.value == .cancelled)
            await manager.shutdown()
        }

        @Test func aResetThroughLibusbKeepsTheConnection() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:000f:RESET")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            let resetsBefore = Int(try SimulatorControl.ioctlLog(device)["resets"] ?? "") ?? -1
            try await manager.reset(accessory)
            #expect(Int(try SimulatorControl.ioctlLog(device)["resets"] ?? "") == resetsBefore + 1)
            try await HardwareTests.barrier(manager, log)  // then no disconnect may have come
            #expect(await manager.connectedAccessories.contains(accessory))
            #expect(await log.events.filter { $0.accessory.connectionID == accessory.connectionID }.count == 1, "no disconnect")
            await manager.shutdown()
        }

        @Test func aReplugNamesTheConnectionItContinues() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager(interval: .seconds(30))
            let device = try plugged.plug("1209:000e:LINK")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let old = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            #expect(old.previousConnectionID == nil)
            let new = try plugged.replug("LINK")
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(new)(a) } else { false } } })
            let successor = try #require(await log.connected.first(where: HardwareTests.isAt(new)))
            #expect(successor.previousConnectionID == old.connectionID)
            await manager.shutdown()
        }
    }
}
