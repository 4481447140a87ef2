import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// Port power through the real host (sysfs and hub class requests through libusb) on
    /// accessory-sim's hubs, which switch per port, ganged or not at all: what a recovery
    /// ladder stands on. Also the faults that need it: wedge, vanish, and `authorized`.
    @Suite("Port power")
    struct PortPower {
        /// A hub for one test, unplugged (with what is behind it) when the test ends.
        final class Hubs {
            private(set) var plugged: [Sim.Device] = []
            @discardableResult
            func plug(_ port: String, ports: Int, _ options: String...) throws -> Sim.Device {
                let words = try Sim.ctl(["plug-hub", port, String(ports)] + options)
                let hub = try Sim.device(fromReply: words)
                plugged.append(hub)
                if words.count >= 7, let bus = Int(words[4]), let address = Int(words[5]) {
                    plugged.append(Sim.Device(bus: bus, address: address, port: words[6]))
                }
                return hub
            }
            deinit { for hub in plugged { try? Sim.unplug(hub) } }
        }

        static func powerLog() throws -> [String] {
            try Sim.output(["power-log"]).split(separator: "\n").map(String.init)
        }

        static func wait(for serial: String, in log: EventLog, after index: Int) async -> Accessory? {
            _ = await log.wait { $0.dropFirst(index).contains { if case .connected(let a) = $0 { a.descriptor.serial == serial } else { false } } }
            return await log.events.dropFirst(index).compactMap { if case .connected(let a) = $0, a.descriptor.serial == serial { a } else { nil } }.last
        }

        static func waitGone(_ accessory: Accessory, in log: EventLog) async -> DisconnectReason? {
            _ = await log.wait { $0.contains { if case .disconnected(let a, _) = $0 { a.connectionID == accessory.connectionID } else { false } } }
            return await log.events.compactMap { if case .disconnected(let a, let r) = $0, a.connectionID == accessory.connectionID { r } else { nil } }.first
        }

        @Test func hubsSayHowTheirPortsSwitchAndWhatIsOnThem() async throws {
            let (manager, _) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-21", ports: 4)
            try hubs.plug("1-22", ports: 3, "--power", "ganged")
            try hubs.plug("1-23", ports: 2, "--power", "none")
            try hubs.plug("1-24", ports: 2, "--usb3")
            let device = try Sim.plug("1209:00e3:LISTED", port: "1-21.3")
            defer { try? Sim.unplug(device) }

            let listed = await manager.hubs()
            let byName = Dictionary(listed.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let perPort = try #require(byName["1-21"])
            #expect(perPort.switching == .perPort)
            #expect(perPort.ports.count == 4)
            #expect(perPort.usbVersion == "2.00")
            #expect(perPort.peer == nil)
            #expect(perPort.ports.allSatisfy { $0.powered == true && $0.hasDisableFile })
            #expect(perPort.ports.map(\.name) == ["1-21.1", "1-21.2", "1-21.3", "1-21.4"])
            #expect(perPort.ports[2].device?.descriptor.serial == "LISTED")
            #expect(perPort.ports[0].device == nil)
            #expect(byName["1-22"]?.switching == .ganged)
            #expect(byName["1-22"]?.ports.count == 3)
            #expect(byName["1-23"]?.switching == PortPowerSwitching.none)
            let usb2 = try #require(byName["1-24"])
            let usb3 = try #require(byName["2-24"])
            #expect(usb2.peer == "2-24" && usb3.peer == "1-24")
            #expect(usb3.usbVersion == "3.00" && usb3.isSuperSpeed)
            #expect(usb3.switching == .perPort)
            #expect(usb2.ports.first?.peer == "2-24.1")
            // The root hubs are listed too, each with its ports.
            #expect(byName["usb1"]?.ports.count == 31)
            #expect(byName["usb1"]?.ports.first { $0.name == "1-21" }?.device?.isHub == true)
            await manager.shutdown()
        }

        @Test func powerOffRemovesTheDeviceAndOnBringsItBackAtTheNextAddress() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-25", ports: 4)
            let device = try Sim.plug("1209:00e4:POWERED", port: "1-25.2")
            var current = device
            defer { try? Sim.unplug(current) }
            let before = try #require(await Self.wait(for: "POWERED", in: log, after: 0))
            let logStart = try Self.powerLog().count

            let off = try await manager.setPortPower("1-25.2", on: false)
            #expect(off.method == .disableFile)
            #expect(off.hub == "1-25" && off.peer == nil && !off.on)
            #expect(await Self.waitGone(before, in: log) == .unplugged)
            #expect(try !Sim.list().contains { $0.serial == "POWERED" })
            let hub = await manager.hubs().first { $0.name == "1-25" }
            #expect(hub?.ports[1].powered == false && hub?.ports[1].device == nil)

            let index = await log.events.count
            _ = try await manager.setPortPower("1-25.2", on: true)
            let back = try #require(await Self.wait(for: "POWERED", in: log, after: index))
            current = try Sim.device(serial: "POWERED")
            #expect(back.descriptor.port == "1-25.2")
            #expect(back.descriptor.address != before.descriptor.address)
            #expect(back.connectionID != before.connectionID)
            #expect(Array(try Self.powerLog().dropFirst(logStart)) == ["1-25.2 off", "1-25.2 on"])
            await manager.shutdown()
        }

        @Test func withoutDisableFilesTheHubsPortPowerFeatureSwitches() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-26", ports: 2, "--no-disable")
            var current = try Sim.plug("1209:00e5:FEATURE", port: "1-26.1")
            defer { try? Sim.unplug(current) }
            let before = try #require(await Self.wait(for: "FEATURE", in: log, after: 0))
            let hub = try #require(await manager.hubs().first { $0.name == "1-26" })
            #expect(hub.ports.allSatisfy { !$0.hasDisableFile })
            let index = await log.events.count
            let reports = try await manager.cyclePortPower("1-26.1", pause: .milliseconds(100))
            #expect(reports.map(\.method) == [.hubRequest, .hubRequest])
            #expect(await Self.waitGone(before, in: log) == .unplugged)
            let back = try #require(await Self.wait(for: "FEATURE", in: log, after: index))
            current = try Sim.device(serial: "FEATURE")
            #expect(back.descriptor.address == current.address)
            await manager.shutdown()
        }

        @Test func gangedAndUnswitchedHubsAreRefusedByName() async throws {
            let (manager, _) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-27", ports: 2, "--power", "ganged")
            try hubs.plug("1-28", ports: 2, "--power", "none")
            let a = try Sim.plug("1209:00e6:GANGED", port: "1-27.1")
            let b = try Sim.plug("1209:00e6:UNSWITCHED", port: "1-28.1")
            defer { try? Sim.unplug(a); try? Sim.unplug(b) }
            let logStart = try Self.powerLog().count
            await #expect(throws: AccessoryError.self) { try await manager.setPortPower("1-27.1", on: false) }
            do {
                _ = try await manager.setPortPower("1-27.1", on: false)
            } catch {
                #expect(error.message == "hub 1-27 switches its ports together (ganged)")
            }
            do {
                _ = try await manager.setPortPower("1-28.1", on: false)
                Issue.record("a hub without power switching switched")
            } catch {
                #expect(error.message.contains("hub 1-28"))
                #expect(error.message.contains("no power switching"))
            }
            #expect(try Sim.list().contains { $0.serial == "GANGED" })
            #expect(try Sim.list().contains { $0.serial == "UNSWITCHED" })
            #expect(try Self.powerLog().count == logStart)
            await manager.shutdown()
        }

        @Test func aGangedHubSwitchesEveryPortAtOnce() async throws {
            // A PORT_POWER request to one port of a ganged hub (as a tool that does not read
            // wHubCharacteristics sends it) switches them all.
            let hubs = Hubs()
            try hubs.plug("1-29", ports: 3, "--power", "ganged")
            let a = try Sim.plug("1209:00e7:GANG1", port: "1-29.1")
            let b = try Sim.plug("1209:00e7:GANG3", port: "1-29.3")
            let logStart = try Self.powerLog().count
            #expect(try Sim.ctl("power", "1-29.1", "off") == ["ok"])
            #expect(try pollUntil { try !Sim.list().contains { $0.serial == "GANG1" || $0.serial == "GANG3" } })
            #expect(Array(try Self.powerLog().dropFirst(logStart)) == ["1-29.1 off", "1-29.2 off", "1-29.3 off"])
            _ = try Sim.ctl("power", "1-29.2", "on")
            #expect(try pollUntil { try Sim.list().filter { $0.serial == "GANG1" || $0.serial == "GANG3" }.count == 2 })
            #expect(try Sim.device(serial: "GANG1").address != a.address && Sim.device(serial: "GANG3").address != b.address)
        }

        @Test func aUSB3HubsPortsSwitchWithTheirPeers() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-30", ports: 2, "--usb3")
            var current = try Sim.plug("1209:00e8:PEERED", port: "1-30.2")
            defer { try? Sim.unplug(current) }
            let before = try #require(await Self.wait(for: "PEERED", in: log, after: 0))
            let logStart = try Self.powerLog().count
            // One half alone does not cut the port's power: the device stays.
            _ = try Sim.ctl("power", "2-30.2", "off")
            #expect(try Sim.list().contains { $0.serial == "PEERED" })
            _ = try Sim.ctl("power", "2-30.2", "on")
            let off = try await manager.setPortPower("1-30.2", on: false)
            #expect(off.peer == "2-30.2")
            #expect(await Self.waitGone(before, in: log) == .unplugged)
            let index = await log.events.count
            _ = try await manager.setPortPower("1-30.2", on: true)
            #expect(await Self.wait(for: "PEERED", in: log, after: index) != nil)
            current = try Sim.device(serial: "PEERED")
            #expect(Array(try Self.powerLog().dropFirst(logStart)) == ["2-30.2 off", "2-30.2 on", "1-30.2 off", "2-30.2 off", "1-30.2 on", "2-30.2 on"])
            await manager.shutdown()
        }

        @Test func reauthorizingReenumeratesTheDevice() async throws {
            let (manager, log) = try await HardwareTests.manager()
            var current = try Sim.plug("1209:00e9:AUTHZ", port: "1-31")
            defer { try? Sim.unplug(current) }
            let before = try #require(await Self.wait(for: "AUTHZ", in: log, after: 0))
            let index = await log.events.count
            try await manager.reauthorize(port: "1-31")
            #expect(await Self.waitGone(before, in: log) == .unplugged)
            let back = try #require(await Self.wait(for: "AUTHZ", in: log, after: index))
            current = try Sim.device(serial: "AUTHZ")
            #expect(back.descriptor.address == current.address && current.address != before.descriptor.address)
            await #expect(throws: AccessoryError.self) { try await manager.reauthorize(port: "1-99") }
            await manager.shutdown()
        }

        static let getStatus = ControlRequest(.standard, request: 0)

        static func answers(_ manager: AccessoryManager, _ accessory: Accessory) async -> Bool {
            do {
                return try await manager.controlTransfer(from: accessory, getStatus, length: 2, timeout: .milliseconds(300)).count == 2
            } catch {
                return false
            }
        }

        @Test func aWedgeIsCuredByItsStepAndNotByAnEarlierOne() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-32", ports: 2)
            var current = try Sim.plug("1209:00ea:WEDGED", port: "1-32.1")
            defer { try? Sim.unplug(current) }
            var accessory = try #require(await Self.wait(for: "WEDGED", in: log, after: 0))
            #expect(await Self.answers(manager, accessory))
            #expect(try Sim.ctl("wedge", current.id, "--cured-by", "power-cycle") == ["ok"])
            do {
                _ = try await manager.controlTransfer(from: accessory, Self.getStatus, length: 2, timeout: .milliseconds(300))
                Issue.record("a wedged device answered")
            } catch {
                #expect(error.code == .timeout, "\(error)")
            }
            // A reset does not cure it.
            try? await manager.reset(accessory)
            accessory = try #require(await manager.connectedAccessories.first { $0.descriptor.serial == "WEDGED" })
            #expect(!(await Self.answers(manager, accessory)))
            // Nor does a reauthorization: it comes back wedged.
            var index = await log.events.count
            try await manager.reauthorize(port: "1-32.1")
            accessory = try #require(await Self.wait(for: "WEDGED", in: log, after: index))
            #expect(!(await Self.answers(manager, accessory)))
            // A power cycle does.
            index = await log.events.count
            _ = try await manager.cyclePortPower("1-32.1", pause: .milliseconds(50))
            accessory = try #require(await Self.wait(for: "WEDGED", in: log, after: index))
            current = try Sim.device(serial: "WEDGED")
            #expect(await Self.answers(manager, accessory))
            await manager.shutdown()
        }

        @Test func aWedgeCuredByResetGoesWithAReset() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let device = try Sim.plug("1209:00eb:RESETME", port: "1-33")
            defer { try? Sim.unplug(device) }
            let accessory = try #require(await Self.wait(for: "RESETME", in: log, after: 0))
            _ = try Sim.ctl("wedge", device.id, "--cured-by", "reset")
            #expect(!(await Self.answers(manager, accessory)))
            try await manager.reset(accessory)
            let now = try #require(await manager.connectedAccessories.first { $0.descriptor.serial == "RESETME" })
            #expect(await Self.answers(manager, now))
            await manager.shutdown()
        }

        @Test func aVanishedDeviceComesBackOnlyWithAPowerCycle() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = Hubs()
            try hubs.plug("1-34", ports: 2)
            var current = try Sim.plug("1209:00ec:VANISH", port: "1-34.2")
            defer { try? Sim.unplug(current) }
            let before = try #require(await Self.wait(for: "VANISH", in: log, after: 0))
            #expect(try Sim.ctl("vanish", current.id, "--back-on", "power-cycle") == ["ok"])
            #expect(await Self.waitGone(before, in: log) == .unplugged)
            _ = await manager.refresh()
            #expect(try !Sim.list().contains { $0.serial == "VANISH" })
            let index = await log.events.count
            _ = try await manager.cyclePortPower("1-34.2", pause: .milliseconds(50))
            #expect(await Self.wait(for: "VANISH", in: log, after: index) != nil)
            current = try Sim.device(serial: "VANISH")
            // --back-on never: a power cycle brings nothing.
            _ = try Sim.ctl("vanish", current.id, "--back-on", "never")
            _ = try await manager.cyclePortPower("1-34.2", pause: .milliseconds(50))
            // Time on purpose: nothing may come back, and an absence cannot be awaited. The
            // simulator plugs a device back as it handles the power-on write, before the cycle
            // returns; 200 ms more leaves a late one time to show.
            try await Task.sleep(for: .milliseconds(200))
            #expect(try !Sim.list().contains { $0.serial == "VANISH" })
            await manager.shutdown()
        }
    }
}
