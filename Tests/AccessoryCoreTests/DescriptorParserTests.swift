import Foundation
import Testing
import AccessoryTestSupport
@testable import AccessoryCore

/// The Sony Xperia Mini Pro's `descriptors` attribute, from umockdev's recording.
let xperiaDescriptors = hexBytes(
    "1201000200000040CE0F660126020203040109022700010100C0FA0904000003FFFF000507058102000200070502020002000705820"
        + "31C0006")

func hexBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    var bytes: [UInt8] = []
    var i = 0
    while i + 1 < digits.count {
        bytes.append(UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16)!)
        i += 2
    }
    return bytes
}

/// Every `H: descriptors=` blob in the corpus of real recordings (`../shared`, when present)
/// and in the package's own fixture recordings, by file.
func corpusDescriptors() -> [(file: String, bytes: [UInt8])] {
    descriptors(under: SharedFolder.recordings.path) + descriptors(under: Fixtures.recordings.path)
}

private func descriptors(under root: String) -> [(file: String, bytes: [UInt8])] {
    guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
    var found: [(String, [UInt8])] = []
    for case let path as String in walker where path.hasSuffix(".umockdev") {
        guard let text = try? String(contentsOfFile: root + "/" + path, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n") where line.hasPrefix("H: descriptors=") {
            found.append((path, hexBytes(String(line.dropFirst("H: descriptors=".count)))))
        }
    }
    return found.sorted { $0.0 < $1.0 }
}

@Suite("USB descriptor parser")
struct DescriptorParserTests {
    @Test func parsesARealDevice() throws {
        let d = try USBDescriptorParser.parse(sysfsDescriptors: xperiaDescriptors)
        #expect(d.issues.isEmpty)
        #expect(d.device == USBDeviceDescriptor(
            bcdUSB: 0x0200, deviceClass: 0, deviceSubclass: 0, deviceProtocol: 0, maxPacketSize0: 64,
            vendor: 0x0fce, product: 0x0166, bcdDevice: 0x0226, manufacturerIndex: 2, productIndex: 3,
            serialNumberIndex: 4, configurationCount: 1))
        #expect(d.configurations.count == 1)
        let c = try #require(d.configurations.first)
        #expect(c.value == 1 && c.attributes == 0xc0 && c.maxPower == 0xfa && c.declaredInterfaceCount == 1)
        #expect(c.interfaces.count == 1)
        let i = try #require(c.interface(0))
        #expect(i.interfaceClass == 0xff && i.interfaceSubclass == 0xff && i.interfaceProtocol == 0)
        #expect(i.nameIndex == 5 && i.isVendorSpecific)
        try #require(i.endpoints == [
            USBEndpoint(address: 0x81, attributes: 0x02, maxPacketSize: 512, interval: 0),
            USBEndpoint(address: 0x02, attributes: 0x02, maxPacketSize: 512, interval: 0),
            USBEndpoint(address: 0x82, attributes: 0x03, maxPacketSize: 28, interval: 6),
        ])
        #expect(i.endpoints[0].direction == .in && i.endpoints[0].transferType == .bulk && i.endpoints[0].number == 1)
        #expect(i.endpoints[1].direction == .out && i.endpoints[2].transferType == .interrupt)
        #expect(d.configuration(value: 1) == c && d.configuration(value: 9) == c)
    }

    @Test("The package's own recording: a loopback accessory behind a hub, and the hubs")
    func parsesTheFixtureRecording() throws {
        let own = descriptors(under: Fixtures.recordings.path)
        #expect(own.count == 3)
        let parsed = try own.map { try USBDescriptorParser.parse(sysfsDescriptors: $0.bytes) }
        #expect(parsed.allSatisfy { $0.issues.isEmpty })
        let loopback = try #require(parsed.first { $0.device.vendor == 0x1209 })
        let i = try #require(loopback.configurations.first?.interface(0))
        #expect(i.isVendorSpecific && i.nameIndex == 4)
        #expect(i.endpoints.map(\.address) == [0x01, 0x81] && i.endpoints.allSatisfy { $0.transferType == .bulk && $0.maxPacketSize == 512 })
        #expect(parsed.filter { $0.device.deviceClass == 9 }.count == 2)
    }

    @Test(.needsCorpus)
    func parsesEveryRecordingCleanly() throws {
        let corpus = corpusDescriptors()
        #expect(corpus.count >= 40)
        for (file, bytes) in corpus {
            let d = try USBDescriptorParser.parse(sysfsDescriptors: bytes)
            #expect(d.issues.isEmpty, "\(file): \(d.issues)")
            #expect(d.configurations.count == Int(d.device.configurationCount), "\(file)")
            for c in d.configurations {
                #expect(!c.interfaces.isEmpty, "\(file)")
                for i in c.interfaces { #expect(i.endpoints.count == Int(i.declaredEndpointCount), "\(file)") }
            }
        }
    }

    @Test func parsesAStandaloneConfiguration() throws {
        let (c, issues) = try USBDescriptorParser.parseConfiguration(Array(xperiaDescriptors[18...]))
        #expect(issues.isEmpty)
        #expect(c.interfaces.first?.endpoints.count == 3)
    }

    @Test func rejectsUnusableDeviceDescriptors() {
        #expect(throws: USBDescriptorError.truncated(descriptorType: 1, needed: 18, available: 0)) {
            try USBDescriptorParser.parseDevice([])
        }
        #expect(throws: USBDescriptorError.unexpectedType(expected: 1, found: 2)) {
            try USBDescriptorParser.parseDevice([18, 2] + [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: USBDescriptorError.invalidLength(descriptorType: 1, length: 0)) {
            try USBDescriptorParser.parseDevice([0, 1] + [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: USBDescriptorError.truncated(descriptorType: 1, needed: 18, available: 10)) {
            try USBDescriptorParser.parseDevice(Array(xperiaDescriptors[..<10]))
        }
    }

    @Test func rejectsUnusableConfigurationHeaders() {
        let config = Array(xperiaDescriptors[18...])
        #expect(throws: USBDescriptorError.invalidLength(descriptorType: 2, length: 4)) {
            var c = config
            c[0] = 4
            _ = try USBDescriptorParser.parseConfiguration(c)
        }
        #expect(throws: USBDescriptorError.invalidTotalLength(3)) {
            var c = config
            c[2] = 3
            c[3] = 0
            _ = try USBDescriptorParser.parseConfiguration(c)
        }
        #expect(throws: USBDescriptorError.truncated(descriptorType: 2, needed: 9, available: 5)) {
            _ = try USBDescriptorParser.parseConfiguration(Array(config[..<5]))
        }
    }

    @Test func zeroLengthDescriptorStopsInsteadOfLooping() throws {
        var c = Array(xperiaDescriptors[18...])
        c[9 + 9] = 0  // the first endpoint's bLength
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(issues.contains(.invalidLength(offset: 18, length: 0)))
        #expect(config.interfaces.count == 1 && config.interfaces[0].endpoints.isEmpty)
        #expect(issues.contains(.endpointCountMismatch(interface: 0, alternate: 0, declared: 3, found: 0)))
    }

    @Test func lengthPastTheEndStops() throws {
        var c = Array(xperiaDescriptors[18...])
        c[9 + 9 + 7 + 7] = 200  // the last endpoint claims 200 bytes
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(issues.contains(.truncated(offset: 32, length: 200, available: 7)))
        #expect(config.interfaces.first?.endpoints.count == 2)
    }

    @Test func totalLengthLies() throws {
        var long = Array(xperiaDescriptors[18...])
        long[2] = 0xff
        long[3] = 0xff
        let (c1, i1) = try USBDescriptorParser.parseConfiguration(long)
        #expect(i1.contains(.totalLengthMismatch(declared: 0xffff, available: 39)))
        #expect(c1.interfaces.first?.endpoints.count == 3)

        var short = Array(xperiaDescriptors[18...])
        short[2] = 32
        let (c2, i2) = try USBDescriptorParser.parseConfiguration(short)
        #expect(i2.contains(.totalLengthMismatch(declared: 32, available: 39)))
        #expect(c2.interfaces.first?.endpoints.count == 2)
    }

    @Test func unknownDescriptorsAreSkipped() throws {
        var c = Array(xperiaDescriptors[18...])
        // An interface association and a class-specific descriptor before the interface.
        c.insert(contentsOf: [8, 0x0b, 0, 1, 0xff, 0xff, 0, 0, 5, 0x24, 1, 2, 3], at: 9)
        c[2] = UInt8(c.count)
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(issues.isEmpty)
        #expect(config.interfaces.first?.endpoints.count == 3)
    }

    @Test func zeroEndpointsAndStrayEndpoints() throws {
        // A configuration with a zero-endpoint interface 0, then an endpoint before any
        // interface is impossible here, so put one right after the header in another blob.
        let header: [UInt8] = [9, 2, 0, 0, 1, 1, 0, 0x80, 50]
        var c = header + [9, 4, 0, 0, 0, 0xff, 0, 0, 0]
        c[2] = UInt8(c.count)
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(issues.isEmpty)
        #expect(config.interfaces == [USBInterface(number: 0, alternate: 0, interfaceClass: 0xff,
            interfaceSubclass: 0, interfaceProtocol: 0, nameIndex: 0)])

        var stray = header + [7, 5, 0x81, 2, 0, 2, 0] + [9, 4, 0, 0, 0, 0xff, 0, 0, 0]
        stray[2] = UInt8(stray.count)
        let (_, strayIssues) = try USBDescriptorParser.parseConfiguration(stray)
        #expect(strayIssues == [.endpointOutsideInterface(offset: 9)])
    }

    @Test func tooManyInterfacesAndEndpointsAreCapped() throws {
        var c: [UInt8] = [9, 2, 0, 0, 1, 1, 0, 0x80, 50]
        c += [9, 4, 0, 0, 40, 0xff, 0, 0, 0]
        for n in 0..<40 { c += [7, 5, UInt8(0x80 | (n & 0x0f)), 2, 0, 2, 0] }
        for n in 0..<300 { c += [9, 4, 1, UInt8(n & 0xff), 0, 0xff, 0, 0, 0] }
        c[2] = UInt8(c.count & 0xff)
        c[3] = UInt8(c.count >> 8)
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(config.interfaces.count == USBDescriptorParser.maxInterfaceDescriptors)
        #expect(config.interfaces.first?.endpoints.count == USBDescriptorParser.maxEndpointsPerInterface)
        #expect(issues.contains(.tooManyInterfaces(limit: 256)))
        #expect(issues.contains(.tooManyEndpoints(interface: 0, alternate: 0, limit: 30)))
        #expect(issues.contains(.interfaceCountMismatch(declared: 1, found: 2)))
    }

    @Test func shortInterfaceAndEndpointAreSkipped() throws {
        var c: [UInt8] = [9, 2, 0, 0, 1, 1, 0, 0x80, 50]
        c += [5, 4, 0, 0, 1]  // too short for an interface
        c += [7, 5, 0x81, 2, 0, 2, 0]  // belongs to the skipped interface: dropped quietly
        c += [9, 4, 0, 0, 1, 0xff, 0, 0, 0]
        c += [4, 5, 0x81, 2]  // too short for an endpoint
        c[2] = UInt8(c.count)
        let (config, issues) = try USBDescriptorParser.parseConfiguration(c)
        #expect(config.interfaces.count == 1)
        #expect(issues.contains(.shortDescriptor(offset: 9, descriptorType: 4, length: 5)))
        #expect(issues.contains(.shortDescriptor(offset: 30, descriptorType: 5, length: 4)))
        #expect(!issues.contains(.endpointOutsideInterface(offset: 14)))
    }

    @Test func sysfsBlobWithTwoConfigurationsAndGarbage() throws {
        let config = Array(xperiaDescriptors[18...])
        var second = config
        second[5] = 2
        var blob = Array(xperiaDescriptors[..<18]) + config + second
        blob[17] = 2
        let d = try USBDescriptorParser.parse(sysfsDescriptors: blob)
        #expect(d.issues.isEmpty)
        #expect(d.configurations.map(\.value) == [1, 2])
        #expect(d.configuration(value: 2)?.value == 2)

        let withGarbage = blob + [0xde, 0xad]
        let g = try USBDescriptorParser.parse(sysfsDescriptors: withGarbage)
        #expect(g.configurations.count == 2)
        #expect(g.issues.count == 1)
        if case .unreadableConfiguration(let offset, _) = g.issues.first { #expect(offset == blob.count) } else {
            Issue.record("expected an unreadable configuration, got \(g.issues)")
        }
    }

    @Test func nestedConfigurationEndsTheOuterOne() throws {
        // The first configuration claims to cover the second one too.
        let config = Array(xperiaDescriptors[18...])
        var first = config
        first[2] = UInt8(config.count * 2)
        var second = config
        second[5] = 2
        var blob = Array(xperiaDescriptors[..<18]) + first + second
        blob[17] = 2
        let d = try USBDescriptorParser.parse(sysfsDescriptors: blob)
        #expect(d.configurations.map(\.value) == [1, 2])
        #expect(d.configurations.allSatisfy { $0.interfaces.count == 1 && $0.interfaces[0].endpoints.count == 3 })
        #expect(d.issues == [.nestedConfiguration(offset: 18 + config.count)])
    }
}
