import AccessoryCore
import Testing
@testable import AccessoryKit

@Suite("Protocol table")
struct ProtocolTableTests {
    static func info(vendor: UInt16, product: UInt16, interfaces: [USBInterface]?) -> USBDeviceInfo {
        USBDeviceInfo(
            descriptor: AccessoryDescriptor(bus: 1, address: 5, port: "1-1", vendor: vendor, product: product),
            deviceClass: 0, deviceDescriptor: nil, configuration: interfaces.map { USBConfiguration(value: 1, interfaces: $0) })
    }

    static let bulkIn = USBEndpoint(address: 0x81, attributes: 2, maxPacketSize: 512, interval: 0)
    static let bulkOut = USBEndpoint(address: 0x01, attributes: 2, maxPacketSize: 512, interval: 0)

    @Test func interfaceStringsThenRules() {
        let table = ProtocolTable(rules: [
            .device(vendor: 0x1209, speaks: "org.example.any"),
            .interface(class: 0x02, subclass: 0x02, speaks: "org.example.acm"),
            .device(vendor: 0x1209, product: 0x0001, speaks: "org.example.loopback"),
            .device(vendor: 0x1209, product: 0x0009, speaks: "org.example.never"),
        ])
        let interfaces = [
            USBInterface(number: 0, alternate: 0, interfaceClass: 0x02, interfaceSubclass: 0x02, interfaceProtocol: 1, nameIndex: 0),
            USBInterface(number: 1, alternate: 0, interfaceClass: 0xff, interfaceSubclass: 0, interfaceProtocol: 0, nameIndex: 4,
                endpoints: [Self.bulkOut, Self.bulkIn], name: "org.example.loopback"),
            USBInterface(number: 2, alternate: 0, interfaceClass: 0x03, interfaceSubclass: 0, interfaceProtocol: 0, nameIndex: 5, name: "HID thing"),
        ]
        let info = Self.info(vendor: 0x1209, product: 0x0001, interfaces: interfaces)
        #expect(table.protocols(for: info) == ["org.example.loopback", "org.example.any", "org.example.acm"])
        #expect(table.interface(for: "org.example.loopback", in: info)?.number == 1)
        #expect(table.interface(for: "org.example.acm", in: info)?.number == 0)
        #expect(table.interface(for: "org.example.any", in: info)?.number == 1)
        #expect(table.interface(for: "org.example.never", in: info) == nil)
        #expect(table.interface(for: "HID thing", in: info)?.number == 2)
    }

    @Test func unknownWithoutConfigurationOrRule() {
        #expect(ProtocolTable().protocols(for: Self.info(vendor: 1, product: 2, interfaces: nil)) == nil)
        #expect(ProtocolTable().protocols(for: Self.info(vendor: 1, product: 2, interfaces: [])) == [])
        let table = ProtocolTable(rules: [.device(vendor: 1, speaks: "p")])
        #expect(table.protocols(for: Self.info(vendor: 1, product: 2, interfaces: nil)) == ["p"])
    }
}
