import Testing

@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Repeated strings are shared")
struct StringTableTests {
    func string(_ table: inout StringTable, _ s: String) -> String {
        Array(s.utf8).withUnsafeBytes { table.string($0) }
    }

    @Test("The same bytes give the same string; other bytes in the same slot give theirs")
    func sameAndColliding() {
        var table = StringTable()
        let long = "STMicroelectronics Virtual ComPort"
        #expect(string(&table, long) == long)
        #expect(string(&table, long) == long)
        // Many distinct long strings: some share slots with others, and every answer is
        // still the string asked for.
        let many = (0..<5000).map { "Manufacturer number \($0)" }
        for s in many { #expect(string(&table, s) == s) }
        for s in many.reversed() { #expect(string(&table, s) == s) }
    }

    @Test("Short, very long and empty strings are decoded without the table")
    func outsideTheTable() {
        var table = StringTable()
        for s in ["", "1-1.2", String(repeating: "x", count: 300)] {
            #expect(string(&table, s) == s)
        }
        var empty = StringTable.empty
        #expect(string(&empty, "a string longer than fifteen bytes") == "a string longer than fifteen bytes")
    }

    @Test("A trace read through the table gives back every record it was written from")
    func readerAgrees() throws {
        var generator = TraceGenerator(seed: 3, events: 3000, devices: 60)
        var records: [TraceRecord] = []
        while let r = generator.next() { records.append(r) }
        let text = records.map(\.jsonLine).joined(separator: "\n") + "\n"
        let read = try TraceReader.readAll(string: text).records
        #expect(read.map(\.event) == records.map(\.event))
        #expect(read.map(\.t) == records.map(\.t))
    }
}
