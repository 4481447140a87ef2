import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Dispatch
import Synchronization
import Testing

/// The kernel's order on an unplug is the simulation's order too, whatever the scheduler
/// does: transfers fail and the manager hears of it, then the device leaves.
@Suite("The order of an unplug")
struct UnplugOrderTests {
    @Test("An unplug waits for a slow device event queue: the session's failed transfers reach the manager before the device leaves, so a LEFT 400 ms late is a ghost")
    func slowEventQueue() async throws {
        let usb = SimulatedUSB()
        let entered = Mutex(false)
        // A slow event thread: the completion of the write in flight comes 300 ms late.
        let slow = SimulatedResponder { _, _ in
            entered.withLock { $0 = true }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(300))
            return .respond([])
        }
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SLOW", responder: slow))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            let session = try await manager.openSession(to: accessory, protocol: "org.example.loopback")
            // A read waits, so IN transfers are in flight (a session submits none before the
            // code reads): they are what fails first when the device goes.
            let reader = Task { try? await session.read() }
            try await session.write([1])
            let deadline = ContinuousClock.now + .seconds(10)
            while !entered.withLock({ $0 }), ContinuousClock.now < deadline { await Task.yield() }
            try #require(entered.withLock { $0 }, "the write reached the accessory")
            await usb.unplug(device, leftEventDelay: .milliseconds(400))
            let event = await events.next()
            guard case .disconnected(let gone, let reason) = event else {
                Issue.record("expected a disconnect, got \(String(describing: event))")
                return
            }
            #expect(gone.connectionID == accessory.connectionID)
            #expect(reason.code == "ghost-evicted", "\(reason)")
            await session.close()
            _ = await reader.value
        }
    }
}
