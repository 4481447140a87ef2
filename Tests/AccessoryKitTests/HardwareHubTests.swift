import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// Accessories behind hubs, as a farm has them: a hub's unplug is every accessory behind
    /// it leaving, deepest first, each with its own event (the kernel's order).
    @Suite("Hubs")
    struct Hubs {
        @Test func aHubsUnplugDisconnectsWhatIsBehindItAsUnplugged() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hub = try Sim.plugHub(at: "1-20", ports: 7)
            var hubPlugged = true
            defer { if hubPlugged { try? Sim.unplug(hub) } }
            var behind: [Sim.Device] = []
            for i in 1...6 { behind.append(try Sim.plug("1209:00e1:HUBBED\(i)", port: "1-20.\(i)")) }
            let inner = try Sim.plugHub(at: "1-20.7", ports: 4)
            behind.append(try Sim.plug("1209:00e1:NESTED", port: "1-20.7.2"))
            try #require(await log.wait { events in behind.allSatisfy { d in events.contains { HardwareTests.isAt(d)($0.accessory) } } })
            // Hubs are hidden: they take no connection ID.
            #expect(!(await log.connected).contains { $0.descriptor.port == hub.port || $0.descriptor.port == inner.port })

            let before = await log.events.count
            try Sim.unplug(hub)
            hubPlugged = false
            let behindHub: @Sendable (AccessoryEvent) -> Bool = { $0.accessory.descriptor.port.hasPrefix("1-20.") }
            try #require(await log.wait { $0.dropFirst(before).filter(behindHub).count >= behind.count })
            try await HardwareTests.barrier(manager, log)  // then nothing more may have come
            // (Other tests' accessories may come and go meanwhile; only the hub's count here.)
            let after = Array(await log.events.dropFirst(before)).filter(behindHub)
            #expect(after.count == behind.count, "\(after)")
            for event in after {
                guard case .disconnected(let a, let reason) = event else {
                    Issue.record("not a disconnect: \(event)")
                    continue
                }
                #expect(reason == .unplugged, "\(a): \(reason)")
            }
            #expect(Set(after.map(\.accessory.descriptor.port)) == Set(behind.map(\.port)))
            // The deepest first, as the kernel removes them.
            #expect(after.first?.accessory.descriptor.port == "1-20.7.2")

            // The live set equals the simulator's, hubs aside. Other suites' accessories come
            // and go meanwhile (with the kernel's order, their remove events come late), so
            // both sides are read again until they agree, for up to 3 s.
            var live: Set<String> = []
            var truth: Set<String> = []
            _ = try await waitUntil(timeout: .seconds(3)) {
                live = Set(await manager.connectedAccessories.map { "\($0.descriptor.bus):\($0.descriptor.address ?? 0)@\($0.descriptor.port)" })
                truth = Set(try Sim.list().filter { $0.vendorProduct != "05e3:0608" }.map(\.device.description))
                return live == truth
            }
            #expect(live == truth)
            await manager.shutdown()
            checkInvariants(await log.events)
        }

        @Test func withHotplugBatchingAStormOfPlugsAndUnplugsLosesNothing() async throws {
            // Notices held back by the event thread (Configuration.hotplugBatching) are handed
            // over when the batch's time is up, even when nothing more comes.
            let (manager, log) = try await HardwareTests.manager { $0.hotplugBatching = .milliseconds(50) }
            var devices: [Sim.Device] = []
            for i in 1...4 { devices.append(try Sim.plug("1209:00fa:BATCH\(i)", port: "2-6\(i)")) }
            try #require(await log.wait { events in devices.allSatisfy { d in events.contains { HardwareTests.isAt(d)($0.accessory) } } })
            let before = await log.events.count
            for d in devices { try Sim.unplug(d) }
            let mine: @Sendable (AccessoryEvent) -> Bool = { $0.accessory.descriptor.serial?.hasPrefix("BATCH") ?? false }
            try #require(await log.wait { $0.dropFirst(before).filter(mine).count >= devices.count })
            for event in await log.events.dropFirst(before).filter(mine) {
                guard case .disconnected(_, let reason) = event else {
                    Issue.record("not a disconnect: \(event)")
                    continue
                }
                #expect(reason == .unplugged)
            }
            #expect(!(await manager.connectedAccessories.contains(where: { $0.descriptor.serial?.hasPrefix("BATCH") ?? false })))
            await manager.shutdown()
            checkInvariants(await log.events)
        }

        @Test func accessoriesOnASecondBus() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let device = try Sim.plug("1209:00e2:BUS2", port: "2-5")
            defer { try? Sim.unplug(device) }
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            #expect(accessory.descriptor.bus == 2)
            let echoed = try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session throws(AccessoryError) in
                try await session.write(Array("bus two".utf8))
                return try await session.read(exactly: 7)
            }
            #expect(echoed == Array("bus two".utf8))
            await manager.shutdown()
        }
    }
}
