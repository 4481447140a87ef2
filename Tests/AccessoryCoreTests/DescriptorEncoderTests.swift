@testable import AccessoryCore
import AccessoryTraces
import Testing

/// ``USBDescriptorEncoder`` writes what ``USBDescriptorParser`` reads: generated descriptors
/// survive the round trip.
@Suite("USB descriptor encoder")
struct DescriptorEncoderTests {
    @Test("500 generated devices and configurations parse back equal after encoding")
    func roundTrip() throws {
        var rng = SplitMix64(seed: 0xdec0de)
        func byte() -> UInt8 { UInt8(truncatingIfNeeded: rng.next()) }
        func word() -> UInt16 { UInt16(truncatingIfNeeded: rng.next()) }
        for _ in 0..<500 {
            let device = USBDeviceDescriptor(
                bcdUSB: word(), deviceClass: byte(), deviceSubclass: byte(), deviceProtocol: byte(), maxPacketSize0: byte(),
                vendor: word(), product: word(), bcdDevice: word(), manufacturerIndex: byte(), productIndex: byte(),
                serialNumberIndex: byte(), configurationCount: byte())
            #expect(try USBDescriptorParser.parseDevice(USBDescriptorEncoder.device(device)) == device)
            var interfaces: [USBInterface] = []
            for number in 0..<UInt8(rng.next() % 4) {
                for alternate in 0..<UInt8(1 + rng.next() % 3) {
                    let endpoints = (0..<(rng.next() % 5)).map { _ in
                        USBEndpoint(address: byte() & 0x8f, attributes: 2 + byte() % 2, maxPacketSize: word() & 0x07ff, interval: byte())
                    }
                    interfaces.append(
                        USBInterface(
                            number: number, alternate: alternate, interfaceClass: byte(), interfaceSubclass: byte(), interfaceProtocol: byte(),
                            nameIndex: byte(), declaredEndpointCount: UInt8(endpoints.count), endpoints: endpoints))
                }
            }
            let configuration = USBConfiguration(
                value: byte(), nameIndex: byte(), attributes: byte() | 0x80, maxPower: byte(),
                declaredInterfaceCount: UInt8(Set(interfaces.map(\.number)).count), interfaces: interfaces)
            let parsed = try USBDescriptorParser.parseConfiguration(USBDescriptorEncoder.configuration(configuration))
            #expect(parsed.issues.isEmpty)
            #expect(parsed.configuration == configuration)
        }
    }

    @Test("A string descriptor holds the text as UTF-16LE after its length and type; index 0 lists US English")
    func strings() {
        #expect(USBDescriptorEncoder.string("Aé") == [6, 3, 0x41, 0, 0xe9, 0])
        #expect(USBDescriptorEncoder.string(String(repeating: "x", count: 300)).count == 254)
        #expect(USBDescriptorEncoder.languages == [4, 3, 0x09, 0x04])
    }
}
