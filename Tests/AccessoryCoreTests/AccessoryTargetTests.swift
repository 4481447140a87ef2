import Testing
@testable import AccessoryCore

@Suite("Accessory targets")
struct AccessoryTargetTests {
    @Test("VID:PID[:SERIAL], BUS:ADDRESS as list prints it, and port chains")
    func parsing() throws {
        #expect(try AccessoryTarget(parsing: "1209:0001") == .ids(vendor: 0x1209, product: 0x0001, serial: nil))
        #expect(try AccessoryTarget(parsing: "1209:ABCD:SN:1") == .ids(vendor: 0x1209, product: 0xabcd, serial: "SN:1"))
        #expect(try AccessoryTarget(parsing: "1209:0001:") == .ids(vendor: 0x1209, product: 0x0001, serial: nil))
        #expect(try AccessoryTarget(parsing: "1:5") == .address(bus: 1, address: 5))
        #expect(try AccessoryTarget(parsing: "3:127") == .address(bus: 3, address: 127))
        #expect(try AccessoryTarget(parsing: "1-1.4") == .port("1-1.4"))
        for bad in ["", "1209", "1:0", "1:128", "0:5", "12345:1", "1-", "usb1", "1209:01", "x:y", "1:5:6"] {
            #expect(throws: AccessoryTarget.ParseError.self, "\(bad)") { try AccessoryTarget(parsing: bad) }
        }
    }

    @Test("Matching: IDs with or without the serial, serial alone, port, bus and address")
    func matching() {
        let a = Accessory(
            connectionID: ConnectionID(rawValue: 3),
            descriptor: AccessoryDescriptor(bus: 1, address: 5, port: "1-1.4", vendor: 0x1209, product: 0x0001, serial: "SN1"))
        #expect(AccessoryTarget.ids(vendor: 0x1209, product: 0x0001, serial: nil).matches(a))
        #expect(AccessoryTarget.ids(vendor: 0x1209, product: 0x0001, serial: "SN1").matches(a))
        #expect(!AccessoryTarget.ids(vendor: 0x1209, product: 0x0001, serial: "SN2").matches(a))
        #expect(!AccessoryTarget.ids(vendor: 0x1209, product: 0x0002, serial: nil).matches(a))
        #expect(AccessoryTarget.serial("SN1").matches(a) && !AccessoryTarget.serial("SN").matches(a))
        #expect(AccessoryTarget.port("1-1.4").matches(a) && !AccessoryTarget.port("1-1").matches(a))
        #expect(AccessoryTarget.address(bus: 1, address: 5).matches(a) && !AccessoryTarget.address(bus: 2, address: 5).matches(a))
        #expect(AccessoryTarget.ids(vendor: 0x1209, product: 0x0001, serial: "SN1").description == "1209:0001:SN1")
    }
}
