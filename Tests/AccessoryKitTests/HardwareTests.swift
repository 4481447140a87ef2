import AccessoryCore
import AccessoryTestSupport
import Foundation
import Logging
import Testing
@testable import AccessoryKit

/// Every test that drives real libusb against accessory-sim's virtual accessories. They
/// share one simulator, so they run one at a time, under this one parent suite.
///
///     accessory-sim --accessory 1209:0001:SN1 --accessory 1209:0002:SN2 -- swift test
@Suite(
    "Hardware (accessory-sim)", .serialized,
    .enabled(if: SimulatorControl.isActive, "needs accessory-sim: run scripts/test"))
struct HardwareTests {
    typealias Sim = SimulatorControl

    /// The devices one test plugged, by serial, so that it can unplug whatever instance
    /// each has become when it ends.
    final class Plugged {
        private(set) var devices: [String: Sim.Device] = [:]

        func plug(_ spec: String, silent: Bool = false) throws -> Sim.Device {
            let serial = String(spec.split(separator: ":")[2])
            let device = try Sim.plug(spec, silent: silent)
            devices[serial] = device
            return device
        }

        /// Records what `serial` became after a command run outside this object.
        func replace(_ serial: String, with device: Sim.Device) {
            devices[serial] = device
        }

        func replug(_ serial: String, silent: Bool = false) throws -> Sim.Device {
            let device = try Sim.replug(try #require(devices[serial]), silent: silent)
            devices[serial] = device
            return device
        }

        func storm(_ serial: String, cycles: Int) throws -> Sim.Device {
            let device = try Sim.storm(try #require(devices[serial]).id, cycles: cycles)
            devices[serial] = device
            return device
        }

        func unplug(_ serial: String, silent: Bool = false) throws {
            let device = try #require(devices[serial])
            devices[serial] = nil
            try Sim.unplug(device, silent: silent)
        }

        func unplugAll() {
            for device in devices.values { try? Sim.unplug(device) }
            devices.removeAll()
        }
    }

    static func manager(
        interval: Duration = .milliseconds(300), logger: Logger = testLogger,
        configure: (inout AccessoryManager.Configuration) -> Void = { _ in }
    ) async throws -> (AccessoryManager, EventLog) {
        var configuration = AccessoryManager.Configuration(reconcileInterval: interval, logger: logger)
        configure(&configuration)
        let manager = try await AccessoryManager(configuration: configuration)
        return (manager, await EventLog.recording(manager))
    }

    /// A barrier on the manager's events: when it returns, `log` holds every event the
    /// manager had to send for what happened before the call. It runs a reconcile (the one a
    /// stray difference would come from), then plugs a sentinel accessory and waits for its
    /// `connected`, which the manager sends after every earlier event, and unplugs it again.
    /// Assert "nothing more came" on the events of other ports after it.
    static func barrier(_ manager: AccessoryManager, _ log: EventLog) async throws {
        _ = await manager.refresh()
        let serial = "BARRIER\(UInt32.random(in: 0...UInt32.max))"
        let sentinel = try Sim.plug("1209:00ef:\(serial)")
        defer { try? Sim.unplug(sentinel) }
        try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { a.descriptor.serial == serial } else { false } } })
    }

    static func isAt(_ device: Sim.Device) -> (Accessory) -> Bool {
        { $0.descriptor.bus == device.bus && $0.descriptor.address == device.address && $0.descriptor.port == device.port }
    }
}

extension HardwareTests {
    @Suite("Enumeration")
    struct Enumeration {
        @Test func twoAccessoriesWithTheirStrings() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            var listing = try Sim.list()
            for (product, serial) in [("0001", "SN1"), ("0002", "SN2")]
            where !listing.contains(where: { $0.vendorProduct == "1209:\(product)" && $0.serial == serial }) {
                _ = try plugged.plug("1209:\(product):\(serial)")
            }
            listing = try Sim.list()

            let (manager, log) = try await HardwareTests.manager()
            #expect(manager.isHotplugAvailable)
            let accessories = await manager.connectedAccessories
            for (product, serial) in [(UInt16(0x0001), "SN1"), (0x0002, "SN2")] {
                let a = try #require(accessories.first { $0.descriptor.product == product && $0.descriptor.serial == serial })
                let entry = try #require(listing.first { $0.serial == serial })
                #expect(HardwareTests.isAt(entry.device)(a))
                #expect(a.descriptor.vendor == 0x1209 && a.descriptor.manufacturer == "Example")
                #expect(a.descriptor.name == "Loopback Accessory")
                #expect(a.protocolStrings.contains("org.example.loopback"))
                #expect(a.physicalIdentity == .serialNumber(vendor: 0x1209, product: product, serial: serial))

                let info = try #require(await manager.deviceInfo(for: a.connectionID))
                #expect(info.speed == .high && !info.isHub)
                let interface = try #require(info.configuration?.interfaces.first { $0.isVendorSpecific })
                #expect(interface.endpoints.contains { $0.address == 0x01 && $0.transferType == .bulk && $0.packetSize == 512 })
                #expect(interface.endpoints.contains { $0.address == 0x81 && $0.transferType == .bulk && $0.packetSize == 512 })
            }
            // libusb's own list agrees, port chains included.
            let records = try LibUSBContext().devices()
            for entry in listing {
                let record = try #require(records.first { $0.bus == entry.device.bus && $0.address == entry.device.address })
                #expect(record.port == entry.device.port)
            }
            await manager.shutdown()
            await log.finished()
            checkInvariants(await log.events)
        }
    }

    @Suite("Hotplug")
    struct Hotplug {
        @Test func plugAndUnplugEachGetANewID() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager(interval: .seconds(30))
            let before = await manager.connectedAccessories.map(\.connectionID).max() ?? .none

            let device = try plugged.plug("1209:0003:PLUG")
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(device)(a) } else { false } } })
            let first = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            #expect(first.connectionID > before)
            #expect(first.descriptor.serial == "PLUG" && first.descriptor.product == 0x0003)

            try plugged.unplug("PLUG")
            try #require(await log.wait { $0.contains { if case .disconnected(let a, .unplugged) = $0 { a.connectionID == first.connectionID } else { false } } })

            let again = try plugged.plug("1209:0003:PLUG")
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(again)(a) && a.connectionID > first.connectionID } else { false } } })
            let second = try #require(await log.connected.last(where: HardwareTests.isAt(again)))
            #expect(second.connectionID > first.connectionID)
            #expect(second.physicalIdentity == first.physicalIdentity)
            await manager.shutdown()
            checkInvariants(await log.events)
        }

        @Test func replugDeliversTheOldDisconnectFirst() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager(interval: .seconds(30))
            let device = try plugged.plug("1209:0004:REPLUG")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let old = try #require(await log.connected.first(where: HardwareTests.isAt(device)))

            let new = try plugged.replug("REPLUG")
            #expect(new.port == device.port && new.address != device.address)
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(new)(a) } else { false } } })
            let events = await log.events
            let gone = try #require(events.firstIndex { if case .disconnected(let a, _) = $0 { a.connectionID == old.connectionID } else { false } })
            let came = try #require(events.firstIndex { if case .connected(let a) = $0 { HardwareTests.isAt(new)(a) } else { false } })
            #expect(gone < came)
            if case .disconnected(_, let reason) = events[gone] { #expect(reason == .unplugged) }
            let successor = events[came].accessory
            #expect(successor.connectionID > old.connectionID && successor.physicalIdentity == old.physicalIdentity)
            await manager.shutdown()
            checkInvariants(await log.events)
        }
    }

    @Suite("Ghosts")
    struct Ghosts {
        static let interval = Duration.milliseconds(300)

        /// Waits until the manager has logged the debounced reconcile that follows a plug.
        static func debouncedReconcileRan(_ captured: CapturedLog) async -> Bool {
            await waitUntil { captured.messages(at: .debug).contains { $0.hasPrefix("reconcile (debounced)") } }
        }

        @Test func silentUnplugIsEvictedWithinOneInterval() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let captured = CapturedLog()
            let (manager, log) = try await HardwareTests.manager(interval: Self.interval, logger: captured.logger)
            let device = try plugged.plug("1209:0005:GHOST")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let ghost = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            // Let the reconcile that follows the plug pass: the periodic one must find the ghost.
            try #require(await Self.debouncedReconcileRan(captured))

            let start = ContinuousClock.now
            try plugged.unplug("GHOST", silent: true)
            try #require(await log.wait { $0.contains { if case .disconnected(let a, _) = $0 { a.connectionID == ghost.connectionID } else { false } } })
            let elapsed = ContinuousClock.now - start
            // One interval, plus an allowance for a loaded 2-core machine: CPU-bound suites
            // running alongside can hold every thread of the cooperative pool for a while.
            #expect(elapsed < Self.interval + .seconds(3), "evicted after \(elapsed)")
            #expect(await log.events.contains { if case .disconnected(let a, .ghostEvicted(.absentFromSnapshot)) = $0 { a.connectionID == ghost.connectionID } else { false } })
            #expect(await !manager.connectedAccessories.contains { $0.connectionID == ghost.connectionID })
            await manager.shutdown()
            checkInvariants(await log.events)
        }

        @Test func silentReplugEvictsTheGhostAndAdmitsTheLiveDevice() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let captured = CapturedLog()
            let (manager, log) = try await HardwareTests.manager(interval: Self.interval, logger: captured.logger)
            let device = try plugged.plug("1209:0006:ASLEEP")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let ghost = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            try #require(await Self.debouncedReconcileRan(captured))

            let start = ContinuousClock.now
            let live = try plugged.replug("ASLEEP", silent: true)
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(live)(a) } else { false } } })
            #expect(ContinuousClock.now - start < Self.interval + .seconds(3))
            let events = await log.events
            let gone = try #require(events.firstIndex { if case .disconnected(let a, _) = $0 { a.connectionID == ghost.connectionID } else { false } })
            let came = try #require(events.firstIndex { if case .connected(let a) = $0 { HardwareTests.isAt(live)(a) } else { false } })
            #expect(gone < came)
            if case .disconnected(_, let reason) = events[gone] { #expect(reason.code == "ghost-evicted") }
            #expect(events[came].accessory.connectionID > ghost.connectionID)
            #expect(events[came].accessory.physicalIdentity == ghost.physicalIdentity)
            #expect(await manager.connectedAccessories.filter { $0.descriptor.port == live.port }.count == 1)
            await manager.shutdown()
            checkInvariants(await log.events)
        }
    }

    @Suite("Storms")
    struct Storms {
        /// Waits until the registry holds exactly the final instance on `device`'s port.
        static func settles(_ manager: AccessoryManager, on device: Sim.Device) async -> Bool {
            await waitUntil(timeout: .seconds(20)) {
                let onPort = await manager.connectedAccessories.filter { $0.descriptor.port == device.port }
                return onPort.count == 1 && HardwareTests.isAt(device)(onPort[0])
            }
        }

        @Test func aThousandCyclesEndWithOneAccessory() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:0007:STORM")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let original = try #require(await log.connected.first(where: HardwareTests.isAt(device)))

            let final = try plugged.storm("STORM", cycles: 1000)
            #expect(await Self.settles(manager, on: final))
            // A refresh changes nothing any more.
            let refreshed = await manager.refresh().events
            #expect(refreshed.isEmpty, "a refresh after the storm settled changed \(refreshed)")
            let onPort = await manager.connectedAccessories.filter { $0.descriptor.port == final.port }
            #expect(onPort.count == 1)
            #expect(onPort.first?.connectionID != original.connectionID)
            await manager.shutdown()
            await log.finished()
            // On the full notification log (the subscriber may still be draining the storm
            // when the registry has settled): the original ID was disconnected, once.
            let events = await log.events
            #expect(events.contains { if case .disconnected(let a, _) = $0 { a.connectionID == original.connectionID } else { false } })
            checkInvariants(events)
        }

        @Test func addressesWrapPast127() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:0008:WRAP")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })

            // 130 re-enumerations cannot all fit in 127 addresses: the counter wraps, and
            // addresses of earlier instances are reused by later ones.
            let final = try plugged.storm("WRAP", cycles: 130)
            #expect(await Self.settles(manager, on: final))
            // The subscriber may still be draining the storm when the registry has settled.
            #expect(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(final)(a) } else { false } } })
            let addresses = await log.connected.filter { $0.descriptor.port == final.port }.compactMap(\.descriptor.address)
            #expect(zip(addresses, addresses.dropFirst()).contains { $0 > $1 }, "no wrap seen in \(addresses)")

            // A new accessory after the wrap gets a fresh ID, whatever address it lands on.
            let newest = await log.connected.map(\.connectionID).max() ?? .none
            let other = try plugged.plug("1209:0008:AFTERWRAP")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(other)($0.accessory) } })
            #expect(try #require(await log.connected.last(where: HardwareTests.isAt(other))).connectionID > newest)
            try plugged.unplug("AFTERWRAP")
            try plugged.unplug("WRAP")
            #expect(await waitUntil { await manager.connectedAccessories.allSatisfy { $0.descriptor.serial?.contains("WRAP") != true } })
            await manager.shutdown()
            await log.finished()
            checkInvariants(await log.events)
        }
    }

    @Suite("Device handles")
    struct Handles {
        static func echo(_ handle: LibUSBDeviceHandle, _ text: String) throws -> String {
            try handle.claimInterface(0)
            defer { try? handle.releaseInterface(0) }
            var out = Array(text.utf8)
            let sent = try out.withUnsafeMutableBytes { buffer throws(AccessoryError) in
                try handle.bulkTransfer(endpoint: 0x01, buffer, timeout: .seconds(2))
            }
            #expect(sent == out.count)
            var input = [UInt8](repeating: 0, count: 512)
            let received = try input.withUnsafeMutableBytes { buffer throws(AccessoryError) in
                try handle.bulkTransfer(endpoint: 0x81, buffer, timeout: .seconds(2))
            }
            return String(decoding: input[..<received], as: UTF8.self)
        }

        @Test func openReadStringsAndEcho() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:0009:LOOP")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))

            let handle = try #require(try await manager.openDevice(accessory.connectionID) as? LibUSBDeviceHandle)
            #expect(!handle.isWrapped)
            #expect(handle.record.port == device.port)
            #expect(try handle.stringDescriptor(index: handle.record.device.productIndex) == "Loopback Accessory")
            #expect(try handle.stringDescriptor(index: handle.record.device.serialNumberIndex) == "LOOP")
            let interface = handle.configurationWithInterfaceNames()?.interfaces.first { $0.isVendorSpecific }
            #expect(interface?.name == "org.example.loopback")
            #expect(try Self.echo(handle, "hello, accessory") == "hello, accessory")
            await manager.shutdown()
        }

        @Test func opensADeviceLibusbsCacheMissed() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager(interval: .milliseconds(300))
            let device = try plugged.plug("1209:000a:MISSED")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })

            // No uevents: libusb never hears of the new instance; sysfs does.
            let live = try plugged.replug("MISSED", silent: true)
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(live)(a) } else { false } } })
            let accessory = try #require(await log.connected.last(where: HardwareTests.isAt(live)))
            let handle = try #require(try await manager.openDevice(accessory.connectionID) as? LibUSBDeviceHandle)
            #expect(handle.isWrapped)
            #expect(handle.record.device.vendor == 0x1209 && handle.record.device.product == 0x000a)
            #expect(try Self.echo(handle, "no restart needed") == "no restart needed")
            await manager.shutdown()
        }

        @Test func aGoneDeviceReportsNoDevice() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager(interval: .seconds(30))
            let device = try plugged.plug("1209:000b:GONE")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))
            let handle = try #require(try await manager.openDevice(accessory.connectionID) as? LibUSBDeviceHandle)
            try plugged.unplug("GONE", silent: true)
            do {
                _ = try Self.echo(handle, "anyone there?")
                Issue.record("a transfer to a removed device succeeded")
            } catch let error as AccessoryError {
                guard error.code.disconnectReason != nil else {
                    Issue.record("expected accessoryDisconnected, got \(error)")
                    return
                }
                await manager.reportNoDevice(accessory.connectionID, operation: error.operation ?? "?")
            }
            // No LEFT event comes (a silent unplug): once sysfs has lacked it for 250 ms, a ghost.
            #expect(await log.wait { $0.contains { if case .disconnected(let a, .ghostEvicted) = $0 { a.connectionID == accessory.connectionID } else { false } } })
            await manager.shutdown()
        }
    }
}
