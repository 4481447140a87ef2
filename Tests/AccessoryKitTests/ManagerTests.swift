import AccessoryCore
import Foundation
import Synchronization
import Testing
@testable import AccessoryKit
import AccessoryLocking

/// A settable uptime source, to fake a system sleep.
final class FakeUptime: Sendable {
    private let value = Locked(SystemUptime(monotonic: .seconds(100), boot: .seconds(100)))
    func now() -> SystemUptime { value.withLock { $0 } }
    func advance(awake: Duration, asleep: Duration = .zero) {
        value.withLock { $0 = SystemUptime(monotonic: $0.monotonic + awake, boot: $0.boot + awake + asleep) }
    }
}

@Suite("AccessoryManager over a fake sysfs and fake hotplug notices, in manual time")
struct ManagerTests {
    let sysfs: FakeSysfs
    let backend: FakeHost

    init() throws {
        sysfs = try FakeSysfs()
        backend = FakeHost(sysfsRoot: sysfs.root)
    }

    func manager(
        interval: Duration = .seconds(60), supported: Set<String>? = nil, table: ProtocolTable = .init(),
        uptime: FakeUptime = FakeUptime()
    ) async throws -> AccessoryManager {
        let configuration = AccessoryManager.Configuration(
            reconcileInterval: interval, debounce: .milliseconds(5), supportedProtocols: supported,
            protocolTable: table, sysfsRoot: sysfs.root, logger: testLogger)
        backend.configure(protocolTable: table, uptime: uptime)
        return try await AccessoryManager(configuration: configuration, host: backend)
    }

    @Test func startsWithTheSnapshotAndHidesHubs() async throws {
        try sysfs.add(port: "usb1", bus: 1, address: 1, vendor: 0x1d6b, product: 0x0002, serial: "0000:00:14.0\n", deviceClass: 9, interfaceString: nil)
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        try sysfs.add(port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "SN2\n")
        let m = try await manager()
        let log = await EventLog.recording(m)
        let accessories = await m.connectedAccessories
        try #require(accessories.map(\.descriptor.serial) == ["SN1", "SN2"])
        #expect(accessories.allSatisfy { $0.descriptor.manufacturer == "Example" && $0.descriptor.name == "Loopback Accessory" })
        #expect(accessories.allSatisfy { $0.protocolStrings == ["org.example.loopback"] })
        #expect(accessories[0].connectionID < accessories[1].connectionID)
        #expect(accessories[0].physicalIdentity == .serialNumber(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        #expect(await log.settled { $0.count == 2 })
        #expect(await log.connected == accessories)

        let info = try #require(await m.deviceInfo(for: accessories[0].connectionID))
        #expect(info.speed == .high && !info.isHub && info.devicePath == "/dev/bus/usb/001/005")
        #expect(info.configuration?.interfaces.first?.name == "org.example.loopback")
        #expect(info.configuration?.interfaces.first?.endpoints.map(\.address) == [0x01, 0x81])
        await m.shutdown()
    }

    @Test func hotplugPlugAndUnplugEachGetANewID() async throws {
        let m = try await manager()
        let log = await EventLog.recording(m)
        try sysfs.add(port: "1-3", bus: 1, address: 7, vendor: 0x1209, product: 0x0001, serial: "SN3\n")
        await backend.send(.arrived, bus: 1, address: 7, port: "1-3", vendor: 0x1209, product: 0x0001)
        #expect(await log.settled { $0.count == 1 })
        let first = try #require(await log.connected.first)
        #expect(first.descriptor.serial == "SN3" && first.descriptor.port == "1-3")

        try sysfs.remove(port: "1-3")
        await backend.send(.left, bus: 1, address: 7, port: "1-3", vendor: 0x1209, product: 0x0001)
        #expect(await log.settled { $0.count == 2 })
        #expect(await log.events.last == .disconnected(first, .unplugged))

        try sysfs.add(port: "1-3", bus: 1, address: 8, vendor: 0x1209, product: 0x0001, serial: "SN3\n")
        await backend.send(.arrived, bus: 1, address: 8, port: "1-3", vendor: 0x1209, product: 0x0001)
        #expect(await log.settled { $0.count == 3 })
        let second = try #require(await log.connected.last)
        #expect(second.connectionID > first.connectionID)
        #expect(second.physicalIdentity == first.physicalIdentity)
        await m.shutdown()
        checkInvariants(await log.events)
    }

    @Test func aStaleArrivalFromABacklogDoesNotEvictTheNewerInstance() async throws {
        // A storm's backlog: sysfs already holds the newest instance (address 9) on the
        // port, while events of older instances (address 8) are still queued.
        try sysfs.add(port: "1-1", bus: 1, address: 9, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        let log = await EventLog.recording(m)
        #expect(await log.settled { $0.count == 1 })
        let live = try #require(await log.connected.first)
        await backend.send(.arrived, bus: 1, address: 8, port: "1-1", vendor: 0x1209, product: 0x0001)
        await backend.send(.left, bus: 1, address: 8, port: "1-1", vendor: 0x1209, product: 0x0001)
        await backend.advance(by: .milliseconds(100))
        // Nothing happened to the live instance: no eviction as "replaced", no new ID.
        #expect(await log.events == [.connected(live)])
        #expect(await m.connectedAccessories == [live])
        await m.shutdown()
        checkInvariants(await log.events)
    }

    @Test func aReconcileBetweenTheRemoveEventAndTheSysfsRemovalAdmitsNoPhantom() async throws {
        // The kernel sends "remove" before it deletes the sysfs directory: a reconcile in
        // between still sees the unplugged instance, and must not admit it again.
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        let log = await EventLog.recording(m)
        #expect(await log.settled { $0.count == 1 })
        let gone = try #require(await log.connected.first)
        await backend.send(.left, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        #expect(await log.settled { $0.count == 2 })
        #expect(await m.refresh().events.isEmpty, "the dying instance was admitted again")
        try sysfs.remove(port: "1-1")
        #expect(await m.refresh().events.isEmpty)
        // The same device back under a new address is a new connection, as ever.
        try sysfs.add(port: "1-1", bus: 1, address: 6, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        #expect(await m.refresh().events.map(\.accessory.descriptor.address) == [6])
        #expect(await log.settled { $0.count == 3 })
        #expect(await log.events.prefix(2) == [.connected(gone), .disconnected(gone, .unplugged)])
        await m.shutdown()
        checkInvariants(await log.events)
    }

    @Test func aDebouncedReconcileLooksOnlyAtThePortsItsEventsNamed() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        try sysfs.add(port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "SN2\n")
        let m = try await manager(interval: .seconds(2))
        let log = await EventLog.recording(m)
        #expect(await log.settled { $0.count == 2 })
        // 1-2 goes with its event lost, and 1-3 arrives with its event lost; then an event
        // on 1-1 (a re-enumeration) brings a debounced reconcile.
        try sysfs.remove(port: "1-2")
        try sysfs.add(port: "1-3", bus: 1, address: 8, vendor: 0x1209, product: 0x0003, serial: "SN3\n")
        try sysfs.remove(port: "1-1")
        await backend.send(.left, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        try sysfs.add(port: "1-1", bus: 1, address: 7, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        await backend.send(.arrived, bus: 1, address: 7, port: "1-1", vendor: 0x1209, product: 0x0001)
        await backend.advance(by: .milliseconds(50))
        // It looked at 1-1 only: the ghost on 1-2 and the newcomer on 1-3 wait for the
        // periodic full scan.
        #expect(await m.connectedAccessories.map(\.descriptor.port).sorted() == ["1-1", "1-2"])
        // The periodic full scan admits 1-3 at once, and lets 1-2 wait its 250 ms for a LEFT
        // event that never comes.
        await backend.advance(by: .seconds(2))
        #expect(await m.connectedAccessories.map(\.descriptor.port).sorted() == ["1-1", "1-2", "1-3"])
        await backend.advance(by: .milliseconds(300))
        #expect(await m.connectedAccessories.map(\.descriptor.port).sorted() == ["1-1", "1-3"])
        #expect(await log.settled { events in
            events.compactMap { e -> DisconnectReason? in
                if case .disconnected(let a, let reason) = e, a.descriptor.port == "1-2" { reason } else { nil }
            } == [.ghostEvicted(.absentFromSnapshot)]
        })
        await m.shutdown()
        checkInvariants(await log.events)
    }

    @Test func duplicatedAndLostEventsConverge() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        let log = await EventLog.recording(m)
        // A duplicated add of a known device, and a remove of a device nobody saw arrive.
        await backend.send(.arrived, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        await backend.send(.left, bus: 1, address: 9, port: "1-4", vendor: 0x1209, product: 0x0003)
        // A device whose add was lost.
        try sysfs.add(port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "SN2\n")
        await backend.send(.left, bus: 1, address: 10, port: "1-5", vendor: 0x1209, product: 0x0003)
        #expect(await m.connectedAccessories.count == 1, "nothing reconciles before the debounce")
        await backend.advance(by: .milliseconds(5))
        #expect(await log.settled { $0.count == 2 })
        await backend.advance(by: .milliseconds(50))
        #expect(await m.connectedAccessories.map(\.descriptor.serial) == ["SN1", "SN2"])
        await m.shutdown()
        checkInvariants(await log.events)
    }

    @Test func silentUnplugIsEvictedByThePeriodicReconcile() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager(interval: .milliseconds(100))
        let log = await EventLog.recording(m)
        let ghost = try #require(await m.connectedAccessories.first)
        try sysfs.remove(port: "1-1")
        await backend.advance(by: .milliseconds(99))
        #expect(await m.connectedAccessories == [ghost], "nothing is due before the interval")
        await backend.advance(by: .milliseconds(1))   // the periodic reconcile finds it missing…
        #expect(await m.connectedAccessories == [ghost])
        await backend.advance(by: .milliseconds(249))
        #expect(await m.connectedAccessories == [ghost], "…and waits 250 ms for its LEFT event…")
        await backend.advance(by: .milliseconds(1))   // …then evicts it
        #expect(await log.settled { $0.count == 2 })
        #expect(await log.events.last == .disconnected(ghost, .ghostEvicted(.absentFromSnapshot)))
        await m.shutdown()
    }

    @Test func aLeftEventTheManagerHasNotYetTakenStillMakesTheDisconnectUnplugged() async throws {
        // A busy process: the LEFT event has reached the inbox, but the manager has not
        // taken it when the look that ends its wait runs.
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager(interval: .milliseconds(100))
        let log = await EventLog.recording(m)
        let gone = try #require(await m.connectedAccessories.first)
        try sysfs.remove(port: "1-1")
        await backend.advance(by: .milliseconds(100))  // the periodic look finds it missing
        backend.hold(.left, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        await backend.advance(by: .milliseconds(250 + 50))  // its wait is over, twice over
        #expect(await m.connectedAccessories == [gone], "a notice the inbox holds may be its LEFT event")
        await backend.releaseHeld()
        #expect(await log.settled { $0.count == 2 })
        #expect(await log.events.last == .disconnected(gone, .unplugged))
        await m.shutdown()
    }

    @Test func silentReplugEvictsTheGhostBeforeAdmittingTheLiveDevice() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager(interval: .milliseconds(100))
        let log = await EventLog.recording(m)
        let ghost = try #require(await m.connectedAccessories.first)
        try sysfs.remove(port: "1-1")
        try sysfs.add(port: "1-1", bus: 1, address: 9, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        await backend.advance(by: .milliseconds(100))
        #expect(await m.connectedAccessories == [ghost], "the live device waits while the ghost waits for its LEFT event")
        await backend.advance(by: .milliseconds(250))
        try #require(await log.settled { $0.count == 3 })
        let events = await log.events
        try #require(events.count == 3)
        #expect(events[1] == .disconnected(ghost, .ghostEvicted(.absentFromSnapshot)))
        guard case .connected(let live) = events[2] else { Issue.record("expected a connect, got \(events[2])"); return }
        #expect(live.descriptor.address == 9 && live.connectionID > ghost.connectionID)
        #expect(live.physicalIdentity == ghost.physicalIdentity)
        await m.shutdown()
    }

    @Test func reportNoDeviceSuspectsThenConfirms() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        let log = await EventLog.recording(m)
        let ghost = try #require(await m.connectedAccessories.first)
        try sysfs.remove(port: "1-1")
        await m.reportNoDevice(ghost.connectionID, operation: "bulk OUT 0x01")
        #expect(await m.connectedAccessories == [ghost], "NO_DEVICE alone evicts nothing")
        await backend.advance(by: .milliseconds(5 + 249))  // the debounce, then the wait
        #expect(await m.connectedAccessories == [ghost], "sysfs lacks it, and its LEFT event may still come")
        await backend.advance(by: .milliseconds(1))
        #expect(await m.connectedAccessories.isEmpty)
        #expect(await log.settled { $0.count == 2 })
        #expect(await log.events.last == .disconnected(ghost, .ghostEvicted(.noDevice(operation: "bulk OUT 0x01"))))
        await m.shutdown()
    }

    @Test func refreshReportsWhatItDid() async throws {
        let m = try await manager()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let report = await m.refresh()
        #expect(report.admitted == 1 && report.evicted == 0)
        #expect((await m.refresh()).kept == 1)
        await m.shutdown()
        #expect((await m.refresh()).events.isEmpty)
    }

    @Test func sleepIsDetectedAndReconciled() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let uptime = FakeUptime()
        let m = try await manager(interval: .milliseconds(50), uptime: uptime)
        let log = await EventLog.recording(m)
        try sysfs.remove(port: "1-1")
        uptime.advance(awake: .milliseconds(50), asleep: .seconds(3600))
        await backend.advance(by: .zero)  // the periodic tick, due now, finds the sleep
        #expect(await log.settled { $0.count == 2 })
        #expect(SystemUptime(monotonic: .seconds(2), boot: .seconds(10)).sleptSince(
            SystemUptime(monotonic: .seconds(1), boot: .seconds(1))) == .seconds(8))
        await m.shutdown()
    }

    @Test func supportedProtocolsFilterAsInfoPlistDoes() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        try sysfs.add(port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "SN2\n", interfaceString: nil)
        let table = ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x0002, speaks: "com.acme.sensor")])
        let m = try await manager(supported: ["com.acme.sensor"], table: table)
        let shown = await m.connectedAccessories
        #expect(shown.map(\.descriptor.serial) == ["SN2"])
        #expect(shown.first?.protocolStrings == ["com.acme.sensor"])
        // Hidden accessories come and go without a word.
        let log = await EventLog.recording(m, includingCurrent: false)
        try sysfs.remove(port: "1-1")
        _ = await m.refresh()
        await backend.advance(by: .milliseconds(20))
        #expect(await log.events.isEmpty)
        await m.shutdown()
    }

    @Test func hiddenDevicesTakeNoIDs() async throws {
        // A hub (hidden) first, then an accessory: the accessory is #1, as `list` says.
        try sysfs.add(port: "usb1", bus: 1, address: 1, vendor: 0x1d6b, product: 0x0002, deviceClass: 9, interfaceString: nil)
        try sysfs.add(port: "1-1", bus: 1, address: 2, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        #expect(await m.connectedAccessories.map(\.connectionID.rawValue) == [1])
        try sysfs.add(port: "1-2", bus: 1, address: 3, vendor: 0x2109, product: 0x2817, deviceClass: 9, interfaceString: nil)
        await backend.send(.arrived, bus: 1, address: 3, port: "1-2", vendor: 0x2109, product: 0x2817)
        try sysfs.add(port: "1-3", bus: 1, address: 4, vendor: 0x1209, product: 0x0002, serial: "SN2\n")
        await backend.send(.arrived, bus: 1, address: 4, port: "1-3", vendor: 0x1209, product: 0x0002)
        await backend.advance(by: .milliseconds(20))
        #expect(await m.connectedAccessories.map(\.connectionID.rawValue) == [1, 2], "the second hub took no number")
        await m.shutdown()
    }

    @Test func visibilityFollowsRefreshes() async throws {
        // Supported protocols set: an accessory read before its interfaces exist (before
        // SET_CONFIGURATION) speaks nothing yet, so it is hidden…
        let m = try await manager(supported: ["org.example.loopback"])
        let log = await EventLog.recording(m, includingCurrent: false)
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n", interfaceString: nil)
        await backend.send(.arrived, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        #expect(await m.connectedAccessories.isEmpty)
        // …until a reconcile sees its interface: then it is announced, as #1.
        try sysfs.remove(port: "1-1")
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        await backend.advance(by: .milliseconds(20))
        #expect(await log.settled { $0.count == 1 })
        let shown = await m.connectedAccessories
        #expect(shown.map(\.connectionID.rawValue) == [1] && shown.first?.protocolStrings == ["org.example.loopback"])
        await m.shutdown()
    }

    @Test func anArrivalWithoutItsSerialWaitsForSysfs() async throws {
        let m = try await manager()
        let log = await EventLog.recording(m, includingCurrent: false)
        // The notice comes before sysfs can be read (a storm): the device has a serial
        // (iSerialNumber 3) that nothing has read yet, so it is not announced by its port…
        await backend.send(.arrived, bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 0x0001)
        #expect(await m.connectedAccessories.isEmpty)
        // …but at the next reconcile, with the serial sysfs gives.
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        await backend.advance(by: .milliseconds(5))
        #expect(await log.settled { $0.count == 1 })
        let shown = try #require(await m.connectedAccessories.first)
        #expect(shown.physicalIdentity == .serialNumber(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        #expect(shown.connectionID.rawValue == 1)
        await m.shutdown()
    }

    @Test func aFailedScanEvictsNothing() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let m = try await manager()
        let before = await m.connectedAccessories
        // sysfs cannot be read (EMFILE, EACCES, …): that is not an empty bus.
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-2/busnum", withIntermediateDirectories: true)
        #expect(await m.refresh().events.isEmpty)
        await backend.advance(by: .seconds(120))
        #expect(await m.connectedAccessories == before)
        try FileManager.default.removeItem(atPath: sysfs.root + "/1-2")
        #expect(await m.refresh().kept == 1)
        await m.shutdown()
    }

    @Test func shutdownDisconnectsEveryoneAndFinishesEveryStream() async throws {
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        try sysfs.add(port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "SN2\n")
        let m = try await manager()
        let a = await EventLog.recording(m)
        let b = await EventLog.recording(m, includingCurrent: false)
        await m.shutdown()
        await a.finished()
        await b.finished()
        #expect(await a.events.count == 4)
        #expect(await b.disconnected.map(\.1) == [.shutdown, .shutdown])
        #expect(await m.connectedAccessories.isEmpty)
        var late = await m.events().makeAsyncIterator()
        #expect(await late.next() == nil)
        await m.shutdown()
    }

    @Test func withAccessoryManagerShutsDownWhenTheBodyThrows() async throws {
        struct Boom: Error {}
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        let configuration = AccessoryManager.Configuration(sysfsRoot: sysfs.root, logger: testLogger)
        let escaped = Mutex<AccessoryManager?>(nil)
        await #expect(throws: Boom.self) {
            try await withAccessoryManager(configuration: configuration) { m in
                escaped.withLock { $0 = m }
                #expect(await m.connectedAccessories.count == 1)
                throw Boom()
            }
        }
        let m = try #require(escaped.withLock { $0 })
        #expect(await m.connectedAccessories.isEmpty)
    }
}
