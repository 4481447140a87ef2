import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

/// The manager's judgement calls under disordered events, on simulated USB in virtual time:
/// nothing here sleeps.
@Suite("The manager's policy on simulated USB")
struct ManagerPolicyTests {
    static let sn1 = SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1")

    @Test("A stale arrival from a backlog does not evict the newer instance on its port")
    func staleArrival() async throws {
        let usb = SimulatedUSB()
        let old = await usb.plug(Self.sn1)
        let live = await usb.replug(old, silently: true)
        try await withAccessoryManager(usb: usb) { manager in
            let shown = await manager.connectedAccessories
            #expect(shown.map(\.descriptor.address) == [live.address])
            await usb.send(.arrival, for: old)
            await usb.send(.removal, for: old)
            await usb.advance(by: .seconds(5))
            #expect(await manager.connectedAccessories == shown, "no eviction as replaced, no new ID")
        }
    }

    @Test("A stale arrival's LEFT leaves nothing behind: the next instance to get its address is connected by its own event")
    func staleArrivalLeavesNoTombstone() async throws {
        let usb = SimulatedUSB()
        let old = await usb.plug(Self.sn1)
        let live = await usb.replug(old, silently: true)
        try await withAccessoryManager(usb: usb) { manager in
            await usb.send(.arrival, for: old)    // skipped: a newer instance holds the port
            await usb.send(.removal, for: old)    // expected, not a removal the registry missed
            // A storm on one port: addresses come round again (2…127), so a later instance
            // gets the stale one's address.
            var next = live
            for _ in 0..<200 where next.address != old.address { next = await usb.replug(next, silently: true) }
            try #require(next.address == old.address)
            await usb.send(.removal, for: live)
            await usb.send(.arrival, for: next)
            // No time passes: no reconcile has run, so only the events can have done this.
            #expect(await manager.connectedAccessories.map(\.descriptor.address) == [next.address])
        }
    }

    @Test("Duplicated arrivals and removals of unknown devices converge on the truth")
    func duplicatesConverge() async throws {
        let usb = SimulatedUSB()
        let a = await usb.plug(Self.sn1)
        try await withAccessoryManager(usb: usb) { manager in
            let before = await manager.connectedAccessories
            await usb.send(.arrival, for: a)
            let stranger = SimulatedDevice(bus: 1, address: 99, port: "1-9", accessory: SimulatedAccessory(vendor: 0x1209, product: 0x0003))
            await usb.send(.removal, for: stranger)
            #expect(await manager.connectedAccessories == before, "a duplicated add mints no second ID")
            let b = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "SN2"))
            await usb.advance(by: .seconds(5))
            #expect(await manager.connectedAccessories.map(\.descriptor.address) == [a.address, b.address])
        }
    }

    @Test("A reconcile between the remove event and the truth's removal admits no phantom")
    func noPhantom() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.sn1)
        try await withAccessoryManager(usb: usb) { manager in
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            await usb.send(.removal, for: device)             // the kernel's remove comes first…
            #expect(await manager.refresh().events.isEmpty, "…and the dying instance is not admitted again")
            await usb.unplug(device, silently: true)          // …then the directory goes
            #expect(await manager.refresh().events.isEmpty)
            let first = await events.next()
            #expect(first.map { if case .disconnected(_, .unplugged) = $0 { true } else { false } } == true)
        }
    }

    @Test("An operation's NO_DEVICE with no LEFT event: a ghost naming the operation, once sysfs lacks it for the whole wait")
    func reportNoDevice() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.sn1)
        try await withAccessoryManager(usb: usb) { manager in
            let a = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            await usb.unplug(device, silently: true)
            await manager.reportNoDevice(a.connectionID, operation: "bulk OUT 0x01")
            #expect(await manager.connectedAccessories == [a], "NO_DEVICE only makes it suspect")
            // The debounced look (20 ms) finds it missing; it waits 250 ms from then.
            await usb.advance(by: .milliseconds(269))
            #expect(await manager.connectedAccessories == [a])
            await usb.advance(by: .milliseconds(1))
            #expect(await events.next() == .disconnected(a, .ghostEvicted(.noDevice(operation: "bulk OUT 0x01"))))
        }
    }

    @Test("NO_DEVICE first, sysfs next, the LEFT event up to 250 ms later (the kernel's order): unplugged, for every delay")
    func kernelOrderIsUnplugged() async throws {
        for delay in [0, 1, 20, 40, 100, 200, 249] {
            let usb = SimulatedUSB()
            let device = await usb.plug(Self.sn1)
            try await withAccessoryManager(usb: usb) { manager in
                let a = try #require(await manager.connectedAccessories.first)
                var events = await manager.events(includingCurrent: false).makeAsyncIterator()
                await manager.reportNoDevice(a.connectionID, operation: "bulk OUT 0x01")
                await usb.unplug(device, leftEventDelay: .milliseconds(delay))
                #expect(await events.next() == .disconnected(a, .unplugged), "LEFT after \(delay) ms")
            }
        }
    }

    @Test("A LEFT event later than the wait: the ghost eviction comes first, and the late LEFT changes nothing")
    func lateLeftEvent() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.sn1)
        let other = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "SN2"))
        try await withAccessoryManager(usb: usb) { manager in
            let a = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            await manager.reportNoDevice(a.connectionID, operation: "bulk OUT 0x01")
            await usb.unplug(device, leftEventDelay: .milliseconds(400))
            #expect(await events.next() == .disconnected(a, .ghostEvicted(.noDevice(operation: "bulk OUT 0x01"))))
            #expect(await manager.connectedAccessories.map(\.descriptor.address) == [other.address], "the other device stays")
        }
    }

    @Test("A live instance is never evicted while sysfs lists it: NO_DEVICE from a missing device node is a false alarm")
    func missingNodeIsNotAGhost() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.sn1)
        try await withAccessoryManager(usb: usb) { manager in
            let a = try #require(await manager.connectedAccessories.first)
            await usb.removeDeviceNode(of: device)
            do throws(AccessoryError) {
                _ = try await manager.openSession(to: a, protocol: "org.example.loopback")
                Issue.record("a device without its node opened")
            } catch {
                #expect(error.code.disconnectReason != nil, "\(error)")
            }
            await usb.advance(by: .seconds(10))
            #expect(await manager.connectedAccessories == [a], "sysfs lists it: it stays, under the same ID")
        }
    }

    @Test("libusb #1586: an open that gets ACCESS right after the arrival is tried again until udevd's rule applies, for at most a second")
    func accessRightAfterArrival() async throws {
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            let device = await usb.plug(Self.sn1)
            await usb.denyAccess(to: device)
            let a = try #require(await manager.connectedAccessories.first)
            let opening = Task { () async throws(AccessoryError) -> AccessorySession in
                try await manager.openSession(to: a, protocol: "org.example.loopback")
            }
            #expect(await usb.waitForSleepers(1), "the open waits on the virtual clock")
            await usb.advance(by: .milliseconds(120))
            await usb.denyAccess(to: device, false)  // the rule has applied
            await usb.advance(by: .milliseconds(50))
            let session = try await opening.value
            await session.close()

            // A node that stays root's: ACCESS, with the udev rule that fixes it, after the wait.
            await usb.denyAccess(to: device)
            let denied = Task { () async -> AccessoryError? in
                do throws(AccessoryError) {
                    _ = try await manager.openSession(to: a, protocol: "org.example.loopback")
                    return nil
                } catch { return error }
            }
            #expect(await usb.waitForSleepers(1))
            await usb.advance(by: .milliseconds(900))
            #expect(await usb.waitForSleepers(1), "still trying within the second")
            await usb.advance(by: .milliseconds(200))
            let error = try #require(await denied.value)
            #expect(error.code == .accessDenied && error.message.contains("udev rule"), "\(error)")
        }
    }
}
