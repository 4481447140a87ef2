import Foundation
import Testing

@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Encoding through a scratch buffer")
struct ByteOutputTests {
    func event(serial: String) -> AccessoryEvent {
        let d = AccessoryDescriptor(bus: 2, address: 9, port: "2-1.3", vendor: 0x1209, product: 0x0001, serial: serial)
        return .disconnected(Accessory(connectionID: ConnectionID(rawValue: 77), descriptor: d), .ghostEvicted(.portReplaced(by: d)))
    }

    @Test("An event too long for the stack buffer is encoded whole, the same as a short one")
    func longEvent() throws {
        for serial in ["SN1", String(repeating: "\u{1}\"x", count: 2000), String(repeating: "é", count: 600)] {
            var output = ReplayOutput()
            output.append(event(serial: serial))
            output.append(event(serial: "after"))
            let lines = output.string.split(separator: "\n")
            try #require(lines.count == 2)
            let first = try #require(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
            #expect(first["serial"] as? String == serial)
            #expect(first["connectionID"] as? Int == 77)
            #expect(first["reason"] as? String == "ghost-evicted")
            let second = try #require(JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
            #expect(second["serial"] as? String == "after")
        }
    }

    @Test("Lines encoded in place across growth, long lines and emptying equal each line alone")
    func growthAndReuse() {
        var output = ReplayOutput()
        var expected: [String] = []
        for i in 0..<3000 {
            // Every 97th line is longer than the room kept for a line; the rest are short.
            let e = event(serial: i % 97 == 0 ? String(repeating: "S\(i)", count: 400) : "SN\(i)")
            output.append(e)
            expected.append(ReplayOutput.line(for: e))
            if i == 1500 {
                #expect(output.string.split(separator: "\n").map(String.init) == expected)
                output.removeAll()
                expected = []
            }
        }
        #expect(output.string.split(separator: "\n").map(String.init) == expected)
        #expect(output.count == expected.reduce(0) { $0 + $1.utf8.count + 1 })
    }

    @Test("Writes past the end of a scratch buffer are dropped and reported")
    func overflow() {
        withUnsafeTemporaryAllocation(byteCount: 8, alignment: 1) { buffer in
            var scratch = ScratchBytes(buffer)
            JSONBytes.appendRaw("1234567", to: &scratch)
            #expect(!scratch.overflowed && scratch.count == 7)
            JSONBytes.appendRaw("89", to: &scratch)
            #expect(scratch.overflowed && scratch.count == 7)
            scratch.append(0x38)
            #expect(scratch.count == 8)
        }
    }
}
