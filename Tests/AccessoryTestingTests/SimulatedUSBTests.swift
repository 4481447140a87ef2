import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

/// The real manager on a simulated USB system, in virtual time: no libusb, no umockdev.
@Suite("SimulatedUSB drives the real manager")
struct SimulatedUSBTests {
    static let loopback = SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1")
    static let other = SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "SN2")

    /// The next `count` notifications of a subscription; they are already there when the
    /// simulation's call returns.
    static func take(_ count: Int, from events: inout AsyncStream<AccessoryEvent>.Iterator) async -> [AccessoryEvent] {
        var out: [AccessoryEvent] = []
        while out.count < count, let e = await events.next() { out.append(e) }
        return out
    }

    @Test("A plug connects with ID 1, an unplug disconnects it as unplugged, a new plug gets ID 2")
    func plugAndUnplug() async throws {
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            var events = await manager.events().makeAsyncIterator()
            let device = await usb.plug(Self.loopback)
            #expect(device.port == "1-1" && device.bus == 1)
            let connected = await Self.take(1, from: &events)
            guard case .connected(let a) = connected.first else { Issue.record("no connect: \(connected)"); return }
            #expect(a.connectionID.rawValue == 1 && a.descriptor.serial == "SN1" && a.descriptor.address == device.address)
            #expect(a.protocolStrings == ["org.example.loopback"])
            #expect(await manager.connectedAccessories == [a])

            await usb.unplug(device)
            #expect(await Self.take(1, from: &events) == [.disconnected(a, .unplugged)])
            let again = await usb.plug(Self.loopback)
            #expect(again.address != device.address, "the next address, as the kernel hands them out")
            let next = await Self.take(1, from: &events)
            #expect(next.first?.accessory.connectionID.rawValue == 2)
        }
    }

    @Test("A silent unplug is found by the periodic reconcile, as a ghost, once the interval and the wait for its LEFT event have passed")
    func silentUnplugIsAGhost() async throws {
        let usb = SimulatedUSB()
        let configuration = AccessoryManager.Configuration(reconcileInterval: .seconds(2))
        try await withAccessoryManager(configuration: configuration, usb: usb) { manager in
            var events = await manager.events().makeAsyncIterator()
            let device = await usb.plug(Self.loopback)
            let a = try #require(await Self.take(1, from: &events).first?.accessory)
            await usb.advance(by: .milliseconds(100))  // the debounced reconcile after the plug
            await usb.unplug(device, silently: true)
            await usb.advance(by: .milliseconds(1800))
            #expect(await manager.connectedAccessories == [a], "nothing is due before the interval")
            await usb.advance(by: .milliseconds(100))  // 2 s: the periodic reconcile
            #expect(await manager.connectedAccessories == [a], "the periodic reconcile found it missing: it waits for a LEFT event")
            await usb.advance(by: .milliseconds(249))
            #expect(await manager.connectedAccessories == [a])
            await usb.advance(by: .milliseconds(1))
            #expect(await Self.take(1, from: &events) == [.disconnected(a, .ghostEvicted(.absentFromSnapshot))])
            #expect(await manager.connectedAccessories.isEmpty)
        }
    }

    @Test("Eight hours asleep: the phone re-enumerated without a word; after the wake the ghost goes and the live device comes")
    func eightHoursAsleep() async throws {
        let usb = SimulatedUSB()
        try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(2)), usb: usb) { manager in
            var events = await manager.events().makeAsyncIterator()
            let device = await usb.plug(Self.loopback)
            let first = try #require(await Self.take(1, from: &events).first?.accessory)
            await usb.sleep(for: .seconds(8 * 3600))
            let live = await usb.replug(device, silently: true)
            await usb.advance(by: .seconds(2))
            let after = await Self.take(2, from: &events)
            #expect(after.count == 2)
            guard case .disconnected(let gone, .ghostEvicted) = after.first, case .connected(let fresh) = after.last else {
                Issue.record("\(after)")
                return
            }
            #expect(gone == first)
            #expect(fresh.connectionID.rawValue == 2 && fresh.descriptor.address == live.address && fresh.descriptor.port == device.port)
            #expect(fresh.physicalIdentity == first.physicalIdentity, "the same accessory came back")
        }
    }

    @Test("A reconcile after a hotplug event waits for the debounce, then 250 ms for a LEFT event, before it calls a missing device a ghost")
    func debounceAndConfirmation() async throws {
        let usb = SimulatedUSB()
        let configuration = AccessoryManager.Configuration(reconcileInterval: .seconds(60), debounce: .milliseconds(20))
        try await withAccessoryManager(configuration: configuration, usb: usb) { manager in
            var events = await manager.events().makeAsyncIterator()
            let quiet = await usb.plug(Self.loopback)
            let a = try #require(await Self.take(1, from: &events).first?.accessory)
            await usb.unplug(quiet, silently: true)
            _ = await usb.plug(Self.other, port: "1-2")  // an event: a debounced reconcile follows
            let b = try #require(await Self.take(1, from: &events).first?.accessory)
            await usb.advance(by: .milliseconds(20))
            #expect(await manager.connectedAccessories == [a, b], "the debounced reconcile found it missing: it waits for a LEFT event")
            await usb.advance(by: .milliseconds(249))
            #expect(await manager.connectedAccessories == [a, b], "for the whole window")
            await usb.advance(by: .milliseconds(1))
            #expect(await Self.take(1, from: &events) == [.disconnected(a, .ghostEvicted(.absentFromSnapshot))])
            #expect(await manager.connectedAccessories == [b])
        }
    }

    @Test("Every manager on one simulation sees every event; a filtered one sees only its protocols")
    func twoManagers() async throws {
        let usb = SimulatedUSB()
        let all = try await AccessoryManager(usb: usb)
        let filtered = try await AccessoryManager(configuration: .init(supportedProtocols: ["com.example.other"]), usb: usb)
        var allEvents = await all.events().makeAsyncIterator()
        var filteredEvents = await filtered.events().makeAsyncIterator()
        _ = await usb.plug(Self.loopback)
        let speaker = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0003, protocols: ["com.example.other"]))
        #expect(await Self.take(2, from: &allEvents).map(\.accessory.connectionID.rawValue) == [1, 2])
        let seen = await Self.take(1, from: &filteredEvents)
        #expect(seen.first?.accessory.descriptor.address == speaker.address)
        #expect(await filtered.connectedAccessories.count == 1)
        await all.shutdown()
        await filtered.shutdown()
    }

    @Test("The test's own sleeps on the simulation's clock end when the simulation gets there")
    func clockSleeps() async throws {
        let usb = SimulatedUSB()
        let clock = usb.clock
        let start = clock.now
        let sleeper = Task { try await clock.sleep(until: start.advanced(by: .seconds(5)), tolerance: nil) }
        await usb.advance(by: .seconds(4))
        #expect(clock.now == start.advanced(by: .seconds(4)))
        await usb.advance(by: .seconds(1))
        try await sleeper.value
        #expect(clock.now == start.advanced(by: .seconds(5)))
        let cancelled = Task { try await clock.sleep(for: .seconds(60)) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }
}
