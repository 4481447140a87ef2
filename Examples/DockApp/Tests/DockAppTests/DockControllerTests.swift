import AccessoryKit
import AccessoryTesting
import DockApp
import Testing

/// Waits, without a clock, until `condition` holds (the controller runs in its own task).
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}

@Test func theDockIsGreetedAndEveryEndingHasItsReason() async throws {
    let usb = SimulatedUSB()
    let dock = SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1")
    let controller = DockController()
    try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(2)), usb: usb) { manager in
        let running = Task { try await controller.run(manager) }

        let first = await usb.plug(dock)
        #expect(await eventually { await controller.greetings.count == 1 })
        await usb.unplug(first)                        // the kernel says so: unplugged
        let second = await usb.plug(dock)
        #expect(await eventually { await controller.greetings.count == 2 })
        await usb.advance(by: .milliseconds(100))      // the debounced reconcile after the plug
        await usb.unplug(second, silently: true)       // the event is lost
        await usb.advance(by: .milliseconds(2250))     // the periodic reconcile finds it gone; with
                                                       // no LEFT event within 250 ms, a ghost
        #expect(await eventually { await controller.endings.count == 2 })

        running.cancel()
        #expect(await controller.greetings == ["hello", "hello"])
        #expect(await controller.endings.map(\.code) == ["unplugged", "ghost-evicted"])
    }
}

@Test func eightHoursAsleepEndsWithTheLiveDock() async throws {
    let usb = SimulatedUSB()
    try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(2)), usb: usb) { manager in
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        let before = await manager.connectedAccessories
        await usb.sleep(for: .seconds(8 * 3600))
        let live = await usb.replug(device, silently: true)
        await usb.advance(by: .seconds(2))
        let after = await manager.connectedAccessories
        #expect(after.count == 1 && after != before)
        #expect(after.first?.descriptor.address == live.address)
        #expect(after.first?.connectionID.rawValue == 2)
    }
}

@Test func aRecordedTraceReplaysThroughTheManager() async throws {
    let trace = """
        {"t":0,"event":"add","bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1"}
        {"t":60,"event":"sleep"}
        {"t":28800,"event":"wake"}
        {"t":28801,"event":"snapshot","devices":[{"bus":1,"address":9,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1"}]}
        """
    let events = try await TraceReplay(contents: trace, name: "overnight.jsonl").events()
    #expect(events.count == 3)
    if case .disconnected(let gone, let reason) = events[1] {
        #expect(gone.connectionID.rawValue == 1 && reason.code == "ghost-evicted")
    } else {
        Issue.record("\(events)")
    }
    #expect(events.last?.accessory.descriptor.address == 9)
}
