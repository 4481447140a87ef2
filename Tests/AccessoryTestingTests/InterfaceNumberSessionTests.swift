import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

/// `openSession(to:interface:)`: a device whose interfaces carry no string, opened by number.
@Suite("Sessions opened by interface number")
struct InterfaceNumberSessionTests {
    @Test("Interface 1 of a device without strings opens and echoes; a second open is busy; a missing number lists those there are")
    func opensByNumber() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0044, serial: "NN1", protocols: ["", ""]))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let session = try await manager.openSession(to: accessory, interface: 1)
            #expect(session.protocolName == "interface 1")
            try await session.write(Array("one".utf8))
            try await session.flush()
            #expect(try await session.read(exactly: 3) == Array("one".utf8))
            await #expect(throws: AccessoryError.self) { _ = try await manager.openSession(to: accessory, interface: 1) }
            await session.close()
            do {
                _ = try await manager.openSession(to: accessory, interface: 5)
                Issue.record("interface 5 opened")
            } catch let error as AccessoryError {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("has no interface 5; it has 0, 1"), "\(error.message)")
            }
        }
    }

    @Test("ProtocolTable(contentsOf:) of a missing file is .io naming it")
    func missingRulesFile() throws {
        do {
            _ = try ProtocolTable(contentsOf: "/nonexistent/rules.json")
            Issue.record("read a missing file")
        } catch {
            #expect(error.code == .io && error.message.contains("/nonexistent/rules.json"), "\(error.message)")
        }
    }
}
