import AccessoryKit
import AccessoryTesting
import Testing
@testable import AccessoryExample

/// The example's own code, tested on simulated USB as a user would test theirs.
@Suite("AccessoryExample on simulated USB")
struct AccessoryExampleTests {
    @Test("echo(through:manager:) gets its ping back from a loopback accessory")
    func echoComesBack() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        let echoed = try await withAccessoryManager(configuration: .init(supportedProtocols: [AccessoryExample.loopback]), usb: usb) { manager in
            try await AccessoryExample.echo(through: try #require(await manager.connectedAccessories.first), manager: manager)
        }
        #expect(echoed)
    }

    @Test("echo(through:manager:) reports a silent accessory's disconnection instead of hanging")
    func disconnectionIsHandled() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1", responder: .sink))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let echo = Task { try await AccessoryExample.echo(through: accessory, manager: manager) }
            var opened = false
            for _ in 0..<10_000 where !opened {
                opened = await !manager.openSessions.isEmpty
                await Task.yield()
            }
            #expect(opened)
            await usb.unplug(device)
            #expect(try await echo.value == false)
        }
    }
}
