import Foundation
import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Trace writer")
struct TraceWriterTests {
    private func written(_ body: (inout TraceWriter<ByteBufferSink>) throws -> Void) rethrows -> String {
        var writer = TraceWriter(sink: ByteBufferSink())
        try body(&writer)
        return writer.sink.string
    }

    @Test("Writes the contract's example lines, fields in order, unknown ones left out")
    func contractLines() throws {
        var d = TraceTestSupport.descriptor(5)
        d.protocols = ["org.example.loopback"]
        let text = try written { w in
            try w.writeHeader(TraceHeader(source: "accessoryctl record", started: "2026-11-21T10:00:00Z"))
            try w.write(t: 0, event: .added(d))
            try w.write(t: 2.5, event: .removed(DeviceRemoval(bus: 1, address: 5, port: "1-1.4")))
            try w.write(t: 3, event: .snapshot([]))
            try w.write(t: 3, event: .sleep)
            try w.write(t: 3, event: .wake)
            try w.write(t: 3, event: .overflow)
        }
        #expect(text == """
            {"format":"accessory-trace","version":1,"source":"accessoryctl record","started":"2026-11-21T10:00:00Z"}
            {"t":0,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","protocols":["org.example.loopback"]}
            {"t":2.5,"event":"remove","bus":1,"address":5,"port":"1-1.4"}
            {"t":3,"event":"snapshot","devices":[]}
            {"t":3,"event":"sleep"}
            {"t":3,"event":"wake"}
            {"t":3,"event":"overflow"}

            """)
    }

    @Test("Every field, in the contract's order")
    func allFields() {
        let full = AccessoryDescriptor(
            bus: 3, address: 19, port: "3-12.4.3", vendor: 0x0403, product: 0x6001, bcdDevice: 0x0600,
            serial: "A50449P0", manufacturer: "FTDI", name: "FT232R USB UART", protocols: ["a", "b"])
        #expect(TraceRecord(t: 1, event: .added(full)).jsonLine
            == #"{"t":1,"event":"add","bus":3,"address":19,"port":"3-12.4.3","vendor":"0403","product":"6001","serial":"A50449P0","manufacturer":"FTDI","name":"FT232R USB UART","bcdDevice":"0600","protocols":["a","b"]}"#)
        let bare = AccessoryDescriptor(bus: 1, address: nil, port: "1-7.2")
        #expect(TraceRecord(t: 4.177868, event: .snapshot([bare, full])).jsonLine
            == #"{"t":4.177868,"event":"snapshot","devices":[{"bus":1,"port":"1-7.2"},{"bus":3,"address":19,"port":"3-12.4.3","vendor":"0403","product":"6001","serial":"A50449P0","manufacturer":"FTDI","name":"FT232R USB UART","bcdDevice":"0600","protocols":["a","b"]}]}"#)
        #expect(TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 2, address: nil, port: "2-1"))).jsonLine
            == #"{"t":0,"event":"remove","bus":2,"port":"2-1"}"#)
        #expect(TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 2, address: 7, port: nil))).jsonLine
            == #"{"t":0,"event":"remove","bus":2,"address":7}"#)
    }

    @Test("t is compact and rounded to microseconds", arguments: [
        (0.0, "0"), (2.5, "2.5"), (0.001234, "0.001234"), (100, "100"), (0.1, "0.1"), (12.3456789, "12.345679"),
        (1.0000004, "1"), (59.999_999_7, "60"), (86400.000001, "86400.000001"), (1e-7, "0"), (-0.0, "0"),
        (1234567.5, "1234567.5"),
    ])
    func seconds(t: Double, text: String) {
        var out: [UInt8] = []
        JSONBytes.appendSeconds(t, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == text)
    }

    @Test("Strings are escaped, and read back equal")
    func escaping() throws {
        let nasty = "q\"b\\s/n\nr\rt\tc\u{1}\u{1f} é 😀 \u{7f}"
        var d = AccessoryDescriptor(bus: 1, address: 2, port: "1-1", serial: nasty, manufacturer: "", name: "\u{0}")
        d.protocols = []
        let line = TraceRecord(t: 0, event: .added(d)).jsonLine
        #expect(line.contains(#""serial":"q\"b\\s/n\nr\rt\tc\u0001\u001f é 😀 \#u{7f}""#))
        #expect(line.contains(#""name":"\u0000""#) && line.contains(#""protocols":[]"#))
        #expect(try TraceReader.readAll(string: line).records.map(\.event) == [.added(d)])
    }

    @Test("Round trip: write then read gives equal records", arguments: [1, 2, 3, 42] as [UInt64])
    func roundTrip(seed: UInt64) throws {
        let generated = Array(TraceGenerator(.init(
            seed: seed, events: 2000, devices: 30, buses: 3, snapshotInterval: 150,
            sleepProbability: 0.01, overflowProbability: 0.01)))
        let faulty = FaultInjector.inject(
            .init(drop: 0.05, duplicate: 0.05, reorder: 0.05, delay: 0.05, wrapAddresses: seed.isMultiple(of: 2)),
            seed: seed, into: generated)
        for records in [generated, faulty] {
            var writer = TraceWriter(sink: ByteBufferSink(), flushesEachRecord: seed == 1)
            try writer.writeHeader()
            for r in records { try writer.write(r) }
            try writer.flush()
            let read = try TraceReader.readAll(bytes: writer.sink.bytes)
            #expect(read.header == TraceHeader())
            #expect(read.records.map(\.event) == records.map(\.event))
            #expect(read.records.map(\.t) == records.map(\.t))
            #expect(read.records.map(\.line) == Array(2..<(records.count + 2)))
        }
    }

    @Test("A file descriptor sink writes every byte; a batching writer holds records until flushed")
    func fileDescriptorSink() throws {
        let dir = try TraceTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("out.trace").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        var writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: fd), flushesEachRecord: false)
        try writer.writeHeader()
        try writer.write(t: 0.5, event: .sleep)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "")
        try writer.flush()
        writer.flushesEachRecord = true
        try writer.write(t: 1, event: .wake)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == """
            {"format":"accessory-trace","version":1}
            {"t":0.5,"event":"sleep"}
            {"t":1,"event":"wake"}

            """)
        close(fd)
        let closed = FileDescriptorSink(fileDescriptor: fd)
        #expect(throws: TraceSinkError(code: EBADF)) { try [UInt8]([1]).withUnsafeBytes { try closed.write($0) } }
    }
}
