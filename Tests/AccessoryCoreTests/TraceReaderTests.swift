import Foundation
import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

/// Paths and helpers the trace and import tests share.
enum TraceTestSupport {
    /// The repository root (three levels above this file).
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A fresh empty directory under the temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("accessory-trace-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func descriptor(
        _ address: Int?, bus: Int = 1, port: String = "1-1.4", vendor: UInt16? = 0x1209,
        product: UInt16? = 0x0001, serial: String? = "SN1"
    ) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: bus, address: address, port: port, vendor: vendor, product: product, serial: serial)
    }
}

@Suite("Trace reader")
struct TraceReaderTests {
    private func read(_ text: String) throws -> TraceContents {
        try TraceReader.readAll(string: text, name: "t.trace")
    }

    @Test("Reads the contract's example, a header, blank lines, CRLF and unknown fields")
    func contractExample() throws {
        let text = """
            {"format":"accessory-trace","version":1,"source":"accessoryctl record","started":"2026-11-21T10:00:00Z"}

            {"t":0.0,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","protocols":["org.example.loopback"]}
               \r
            {"t":2.5,"event":"remove","bus":1,"address":5,"port":"1-1.4","extra":{"nested":[1,{"x":"\\u00e9"}]},"n":null}\r
            {"t":3.0,"event":"snapshot","devices":[{"bus":1,"port":"1-2","vendor":"ABCD","product":"0002","future":true}]}
            {"t":3,"event":"sleep"}
            {"t":4,"event":"wake","why":"lid"}
            {"t":4,"event":"overflow"}

            """
        let trace = try read(text)
        #expect(trace.header == TraceHeader(version: 1, source: "accessoryctl record", started: "2026-11-21T10:00:00Z"))
        #expect(trace.warnings.isEmpty)
        var added = TraceTestSupport.descriptor(5)
        added.protocols = ["org.example.loopback"]
        let expected: [TraceRecord] = [
            TraceRecord(t: 0, event: .added(added), line: 3),
            TraceRecord(t: 2.5, event: .removed(DeviceRemoval(bus: 1, address: 5, port: "1-1.4")), line: 5),
            TraceRecord(t: 3, event: .snapshot([
                AccessoryDescriptor(bus: 1, address: nil, port: "1-2", vendor: 0xabcd, product: 0x0002),
            ]), line: 6),
            TraceRecord(t: 3, event: .sleep, line: 7),
            TraceRecord(t: 4, event: .wake, line: 8),
            TraceRecord(t: 4, event: .overflow, line: 9),
        ]
        #expect(trace.records == expected)
    }

    @Test("Keys in any order, spaced, escaped, repeated or near the writer's own read as the writer's order does")
    func keyOrder() throws {
        let written = #"{"t":1.5,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","manufacturer":"pid.codes","name":"Loopback","bcdDevice":"0100","protocols":["p"]}"#
        let variants = [
            #"{"protocols":["p"],"bcdDevice":"0100","name":"Loopback","manufacturer":"pid.codes","serial":"SN1","product":"0001","vendor":"1209","port":"1-1.4","address":5,"bus":1,"event":"add","t":1.5}"#,
            #"{ "t" : 1.5 , "event" :"add", "bus":1,"address" :5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","manufacturer":"pid.codes","name":"Loopback","bcdDevice":"0100","protocols":["p"] }"#,
            #"{"t":1.5,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","manufacturer":"pid.codes","name":"Loopback","bcdDevice":"0100","protocols":["p"]}"#,
            #"{"t":9,"tt":1,"t":1.5,"event":"add","eventx":"x","bus":2,"bus":1,"busy":3,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","manufacturer":"pid.codes","name":"Loopback","bcdDevice":"0100","protocols":["p"]}"#,
        ]
        let expected = try read(written).records.map(\.event)
        #expect(expected == [.added(AccessoryDescriptor(
            bus: 1, address: 5, port: "1-1.4", vendor: 0x1209, product: 0x0001, bcdDevice: 0x0100, serial: "SN1",
            manufacturer: "pid.codes", name: "Loopback", protocols: ["p"]))])
        for (i, line) in variants.enumerated() {
            let trace = try read(line)
            #expect(trace.records.map(\.event) == expected, "variant \(i)")
            #expect(trace.records.map(\.t) == [1.5], "variant \(i)")
        }
        // A snapshot's devices, one in the writer's order and one not.
        let snapshot = try read(#"{"t":2,"event":"snapshot","devices":[{"bus":1,"address":5,"port":"1-1.4","serial":"SN1"},{"serial":"SN2","port":"1-1.5","bus":1,"t":7}]}"#)
        #expect(snapshot.records.map(\.event) == [.snapshot([
            AccessoryDescriptor(bus: 1, address: 5, port: "1-1.4", serial: "SN1"), AccessoryDescriptor(bus: 1, address: nil, port: "1-1.5", serial: "SN2"),
        ])])
    }

    @Test("An add may leave out what the source did not know; a remove needs address or port")
    func optionalFields() throws {
        let trace = try read("""
            {"t":0,"event":"add","bus":3,"port":"3-12.4.3"}
            {"t":1,"event":"remove","bus":3,"port":"3-12.4.3"}
            {"t":2,"event":"remove","bus":3,"address":9}
            """)
        #expect(trace.records.map(\.event) == [
            .added(AccessoryDescriptor(bus: 3, address: nil, port: "3-12.4.3")),
            .removed(DeviceRemoval(bus: 3, address: nil, port: "3-12.4.3")),
            .removed(DeviceRemoval(bus: 3, address: 9, port: nil)),
        ])
    }

    static let malformed: [(String, Int, String)] = [
        ("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1,\"event\":\n{\"t\":2,\"event\":\"wake\"}\n", 2,
         "invalid JSON: line ends early: expected a value at column 16"),
        ("\n\n{bad}\n", 3, "invalid JSON: expected a string key, found 'b' at column 2"),
        (#"{"t":0,"event":"add","bus":1,"address":5}"#, 1, "missing required field 'port' in add event"),
        (#"{"t":0,"event":"add","port":"1-1","address":5}"#, 1, "missing required field 'bus' in add event"),
        (#"{"t":0,"event":"remove","address":5}"#, 1, "missing required field 'bus' in remove event"),
        (#"{"t":0,"event":"remove","bus":1}"#, 1, "remove event needs 'address' or 'port'"),
        (#"{"t":0,"event":"add","bus":1,"address":128,"port":"1-1"}"#, 1,
         "field 'address' must be an integer from 1 to 127, got 128"),
        (#"{"t":0,"event":"add","bus":1,"address":0,"port":"1-1"}"#, 1,
         "field 'address' must be an integer from 1 to 127, got 0"),
        (#"{"t":0,"event":"add","bus":1,"address":5.5,"port":"1-1"}"#, 1,
         "field 'address' must be an integer from 1 to 127, got 5.5"),
        (#"{"t":0,"event":"add","bus":1,"address":null,"port":"1-1"}"#, 1,
         "field 'address' must be an integer, got null"),
        (#"{"t":0,"event":"add","bus":"1","port":"1-1"}"#, 1, "field 'bus' must be an integer, got a string"),
        (#"{"t":0,"event":"add","bus":256,"port":"1-1"}"#, 1, "field 'bus' must be an integer from 1 to 255, got 256"),
        (#"{"t":0,"event":"add","bus":1,"port":14}"#, 1, "field 'port' must be a string, got a number"),
        (#"{"t":0,"event":"add","bus":1,"port":""}"#, 1, "field 'port' must not be empty"),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","vendor":"12"}"#, 1,
         "field 'vendor' must be 4 hexadecimal digits, got \"12\""),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","product":"0x12"}"#, 1,
         "field 'product' must be 4 hexadecimal digits, got \"0x12\""),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","bcdDevice":256}"#, 1,
         "field 'bcdDevice' must be a string of 4 hexadecimal digits, got a number"),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","serial":5}"#, 1, "field 'serial' must be a string, got a number"),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","protocols":"x"}"#, 1,
         "field 'protocols' must be an array of strings, got a string"),
        (#"{"t":0,"event":"add","bus":1,"port":"1-1","protocols":["a",1]}"#, 1,
         "field 'protocols' must be an array of strings, got a number"),
        ("{\"t\":1,\"event\":\"sleep\"}\n{\"t\":2,\"event\":\"wake\"}\n{\"t\":1.5,\"event\":\"sleep\"}\n", 3,
         "'t' went backwards: 1.5 after 2.0 on line 2"),
        (#"{"event":"sleep"}"#, 1, "missing required field 't'"),
        (#"{"t":-1,"event":"sleep"}"#, 1, "field 't' must be a finite number of seconds, not negative, got -1"),
        (#"{"t":"0","event":"sleep"}"#, 1, "field 't' must be a number, got a string"),
        (#"{"t":1e999,"event":"sleep"}"#, 1, "field 't' must be a finite number of seconds, not negative, got 1e999"),
        (#"{"t":0,"event":"plug"}"#, 1, "unknown event \"plug\""),
        (#"{"t":0}"#, 1, "missing required field 'event'"),
        (#"{"t":0,"event":"snapshot"}"#, 1, "missing required field 'devices' in snapshot event"),
        (#"{"t":0,"event":"snapshot","devices":[{"bus":1,"port":"1-1"},{"bus":1}]}"#, 1,
         "devices[1]: missing required field 'port'"),
        (#"{"t":0,"event":"snapshot","devices":[{"bus":1,"port":"1-1","vendor":"xyz1"}]}"#, 1,
         "devices[0]: field 'vendor' must be 4 hexadecimal digits, got \"xyz1\""),
        (#"{"t":0,"event":"snapshot","devices":[1]}"#, 1, "field 'devices' must be an array of device objects, got a number"),
        ("{\"t\":0,\"event\":\"sleep\"}\n{\"format\":\"accessory-trace\",\"version\":1}\n", 2,
         "a header is allowed only on the first line"),
        (#"{"format":"accessory-trace","version":2}"#, 1, "unsupported trace version 2 (this reader knows version 1)"),
        (#"{"format":"accessory-trace"}"#, 1, "header lacks 'version'"),
        (#"{"format":"pcap","version":1}"#, 1,
         "not an accessory trace: format is \"pcap\", expected \"accessory-trace\""),
        ("[1,2]", 1, "a trace line must be a JSON object, not an array"),
        ("\"add\"", 1, "a trace line must be a JSON object, not a string"),
        ("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1,\"event\":\"wake\"\n{\"t\":2,\"event\":\"sleep\"}\n", 2,
         "invalid JSON: line ends early: expected ',' or '}' after object member at column 22"),
    ]

    @Test("Each malformed trace gives FILE:LINE: reason, with the right line", arguments: malformed)
    func malformedTrace(text: String, line: Int, reason: String) {
        #expect(throws: TraceError(file: "t.trace", line: line, reason: reason)) { try read(text) }
    }

    @Test("The error prints as FILE:LINE: reason")
    func errorFormat() {
        #expect(TraceError(file: "a.trace", line: 7, reason: "missing required field 't'").description
            == "a.trace:7: missing required field 't'")
        #expect(TraceError(file: "a.trace", line: nil, reason: "cannot open").description == "a.trace: cannot open")
    }

    @Test("A truncated last line is a warning and everything before it is used")
    func truncatedLastLine() throws {
        let trace = try read("""
            {"t":0,"event":"add","bus":1,"address":5,"port":"1-1.4"}
            {"t":1,"event":"remove","bus":1,"addr
            """)
        #expect(trace.records.count == 1)
        #expect(trace.warnings.map(\.description) == ["t.trace:2: truncated last line (writer killed mid-line?)"])
        // Cut in the middle of a string, of a number, after a comma, right after the brace.
        for cut in ["{\"t\":1,\"event\":\"rem", "{\"t\":1", "{\"t\":1,", "{", "{\"t\":1.", "{\"t\":1,\"event\":\"sleep\""] {
            let t = try read("{\"t\":0,\"event\":\"sleep\"}\n" + cut)
            #expect(t.records.count == 1 && t.warnings.count == 1, "cut \(cut)")
        }
    }

    @Test("A last line without newline that is valid is used; a cut line before the end is an error")
    func unterminatedButValid() throws {
        let trace = try read("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1,\"event\":\"wake\"}")
        #expect(trace.records.map(\.event) == [.sleep, .wake])
        #expect(trace.warnings.isEmpty)
        // Valid JSON that breaks the format is an error even on an unterminated last line.
        #expect(throws: TraceError(file: "t.trace", line: 2, reason: "missing required field 'event'")) {
            try read("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1}")
        }
        // The same cut line followed by a newline is not the exceptional case.
        #expect(throws: TraceError.self) { try read("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1,\n") }
    }

    @Test("A header alone, an empty trace, and a byte order mark")
    func edges() throws {
        #expect(try read("").records.isEmpty)
        #expect(try read("\n\n").records.isEmpty)
        let header = try read(#"{"format":"accessory-trace","version":1}"#)
        #expect(header.header == TraceHeader() && header.records.isEmpty)
        let bom = try TraceReader.readAll(bytes: [0xEF, 0xBB, 0xBF] + Array("{\"t\":0,\"event\":\"wake\"}\n".utf8))
        #expect(bom.records.map(\.event) == [.wake])
    }

    @Test("Streams from a file in small chunks, with lines longer than a chunk")
    func streamingFromFile() throws {
        let dir = try TraceTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("gen.trace").path
        var writer = TraceWriter(sink: ByteBufferSink(), flushesEachRecord: false)
        try writer.writeHeader(TraceHeader(source: "test"))
        let records = Array(TraceGenerator(.init(seed: 3, events: 3000, devices: 40, buses: 2, snapshotInterval: 200)))
        for r in records { try writer.write(r) }
        try writer.flush()
        try Data(writer.sink.bytes).write(to: URL(fileURLWithPath: path))

        for chunk in [16, 97, 4096, 1 << 20] {
            var reader = try TraceReader(path: path, chunkSize: chunk)
            #expect(reader.header?.source == "test")
            var count = 0
            while let r = try reader.next() {
                #expect(r.t == records[count].t && r.event == records[count].event && r.line == count + 2)
                count += 1
            }
            #expect(count == records.count, "chunk \(chunk)")
            #expect(try reader.next() == nil)
        }
        #expect(try TraceReader.readAll(path: path).records.count == records.count)
    }

    @Test("Reads from a file descriptor, and names a missing file")
    func descriptorsAndMissingFiles() throws {
        let dir = try TraceTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("x.trace").path
        try Data("{\"t\":0,\"event\":\"sleep\"}\n{\"t\":1,\"ev".utf8).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        var reader = try TraceReader(fileDescriptor: fd, name: "stdin", closeWhenDone: true)
        #expect(try reader.next()?.event == .sleep)
        #expect(try reader.next() == nil)
        #expect(reader.warnings.map(\.description) == ["stdin:2: truncated last line (writer killed mid-line?)"])

        let missing = dir.appendingPathComponent("missing.trace").path
        #expect(throws: TraceError(file: missing, line: nil, reason: "cannot open: No such file or directory")) {
            try TraceReader.readAll(path: missing)
        }
    }
}
