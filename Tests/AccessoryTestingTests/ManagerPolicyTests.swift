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

    @Test("An operation's NO_DEVICE evicts the instance at once, naming the operation")
    func reportNoDevice() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.sn1)
        try await withAccessoryManager(usb: usb) { manager in
            let a = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            await usb.unplug(device, silently: true)
            await manager.reportNoDevice(a.connectionID, operation: "bulk OUT 0x01")
            #expect(await events.next() == .disconnected(a, .ghostEvicted(.noDevice(operation: "bulk OUT 0x01"))))
        }
    }
}
