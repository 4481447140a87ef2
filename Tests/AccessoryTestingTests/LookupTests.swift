import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

@Suite("Looking accessories up")
struct LookupTests {
    @Test("By serial, VID:PID, port or bus:address; cloned serials are ambiguous and the error names both ports")
    func lookups() async throws {
        let usb = SimulatedUSB()
        let a = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "CLONE"))
        let b = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "CLONE"))
        let c = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "ONLY"))
        try await withAccessoryManager(usb: usb) { manager in
            #expect(try await manager.accessory(matching: .serial("ONLY")).descriptor.port == c.port)
            #expect(try await manager.accessory(matching: .port(b.port)).descriptor.address == b.address)
            #expect(try await manager.accessory(matching: .address(bus: 1, address: a.address)).descriptor.port == a.port)
            #expect(await manager.accessories(matching: .ids(vendor: 0x1209, product: 0x0001, serial: nil)).count == 2)
            let clones = try AccessoryTarget(parsing: "1209:0001:CLONE")
            do throws(AccessoryError) {
                _ = try await manager.accessory(matching: clones)
                Issue.record("two clones matched as one")
            } catch {
                #expect(error.code == .notFound)
                #expect(error.message.contains(a.port) && error.message.contains(b.port), "\(error.message)")
            }
            do throws(AccessoryError) {
                _ = try await manager.accessory(matching: .serial("NOPE"))
                Issue.record("a missing serial matched")
            } catch {
                #expect(error.message.hasPrefix("no accessory matches serial NOPE; present: "))
            }
        }
    }
}
