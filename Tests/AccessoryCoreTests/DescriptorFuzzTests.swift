import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

// The seeded generator is the core's own `SplitMix64`, so a failing input can be reproduced.

@Suite("USB descriptor parser under hostile input")
struct DescriptorFuzzTests {
    static let interesting: [UInt8] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 0x12, 0x7f, 0x80, 0xfe, 0xff]

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<8, using: &rng) {
            case 0 where !b.isEmpty:
                let i = Int.random(in: 0..<b.count, using: &rng)
                b[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
            case 1 where !b.isEmpty:
                b[Int.random(in: 0..<b.count, using: &rng)] = interesting.randomElement(using: &rng)!
            case 2 where !b.isEmpty:
                b.removeLast(Int.random(in: 0...b.count, using: &rng))
            case 3 where !b.isEmpty:
                let start = Int.random(in: 0..<b.count, using: &rng)
                let end = Int.random(in: start...b.count, using: &rng)
                b.insert(contentsOf: b[start..<end], at: Int.random(in: 0...b.count, using: &rng))
            case 4:
                let n = Int.random(in: 1...16, using: &rng)
                let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                b.insert(contentsOf: bytes, at: Int.random(in: 0...b.count, using: &rng))
            case 5 where b.count > 1:
                let i = Int.random(in: 0..<b.count, using: &rng)
                b.remove(at: i)
            case 6 where b.count > 20:
                // Aim at a length field: a descriptor's bLength or the configuration's wTotalLength.
                let i = [0, 18, 20, 21, 27, 36, 43].randomElement(using: &rng)!
                if i < b.count { b[i] = interesting.randomElement(using: &rng)! }
            default:
                b.append(UInt8.random(in: 0...255, using: &rng))
            }
        }
        return b
    }

    static func check(_ input: [UInt8]) {
        if let d = try? USBDescriptorParser.parse(sysfsDescriptors: input) {
            for c in d.configurations {
                // Recorded as failures that name the input, not a crash of the whole runner.
                #expect(c.interfaces.count <= USBDescriptorParser.maxInterfaceDescriptors, "\(input)")
                for i in c.interfaces {
                    #expect(i.endpoints.count <= USBDescriptorParser.maxEndpointsPerInterface, "\(input)")
                }
            }
        }
        if input.count > 18 { _ = try? USBDescriptorParser.parseConfiguration(Array(input[18...])) }
        _ = try? USBDescriptorParser.parseConfiguration(input)
        _ = USBStringDescriptor.decode(input)
        _ = USBStringDescriptor.languageIDs(input)
    }

    // Both loops yield now and then, so that they never starve other suites' async tests of
    // the (small) cooperative thread pool.
    @Test func hundredThousandMutationsNeverCrash() async {
        var seeds = corpusDescriptors().map(\.bytes)
        seeds.append(xperiaDescriptors)
        var rng = SplitMix64(seed: 0xACCE_5501)
        var input: [UInt8] = []
        for n in 0..<100_000 {
            // Mostly fresh mutations of a seed; sometimes keep mutating the last input.
            let base = n % 4 == 3 && !input.isEmpty ? input : seeds.randomElement(using: &rng)!
            input = Self.mutate(base, &rng)
            if input.count > 4096 { input.removeLast(input.count - 4096) }
            Self.check(input)
            if n % 500 == 0 { await Task.yield() }
        }
    }

    @Test func randomBytesBehindValidHeadersNeverCrash() async {
        var rng = SplitMix64(seed: 7)
        for n in 0..<20_000 {
            if n % 500 == 0 { await Task.yield() }
            let n = Int.random(in: 0..<300, using: &rng)
            var body = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Make most descriptors plausible so the parser gets deep into the body.
            var i = 0
            while i + 1 < body.count {
                body[i] = UInt8.random(in: 0...12, using: &rng)
                body[i + 1] = [2, 4, 5, 0x0b, 0x21, 0x30].randomElement(using: &rng)!
                i += max(2, Int(body[i]))
            }
            let total = UInt16(9 + body.count)
            let header: [UInt8] = [9, 2, UInt8(total & 0xff), UInt8(total >> 8), 1, 1, 0, 0x80, 50]
            Self.check(Array(xperiaDescriptors[..<18]) + header + body)
        }
    }
}
