import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Foundation
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

    @Test("ProtocolTable(contentsOf:) of a missing file is .io naming it and the system's reason")
    func missingRulesFile() throws {
        do {
            _ = try ProtocolTable(contentsOf: "/nonexistent/rules.json")
            Issue.record("read a missing file")
        } catch {
            #expect(error.code == .io && error.message.contains("/nonexistent/rules.json"), "\(error.message)")
            #expect(error.message.hasSuffix(": No such file or directory"), "\(error.message)")
        }
    }

    @Test("ProtocolTable(contentsOf:) reads a file larger than one read, whole")
    func largeRulesFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rules = (0..<2000).map { #"{"vendor":"1209","product":"\#(Hex.four(UInt16($0)))","interface":0,"protocol":"com.example.p\#($0)"}"# }
        try Data(("[" + rules.joined(separator: ",\n") + "]").utf8).write(to: URL(fileURLWithPath: path))
        let table = try ProtocolTable(contentsOf: path)
        #expect(table.rules.count == 2000)
        #expect(table.rules.last?.protocolName == "com.example.p1999")
    }
}
