import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

/// The hand-written JSON parser against Foundation's `JSONSerialization`, line by line, over
/// the trace reader's fuzz corpus (the package's traces, every udevadm log imported as a trace,
/// generated traces and replay output) and seeded mutations of it: both must accept the same
/// lines, and read the same values from them.
@Suite("JSON parser against JSONSerialization")
struct JSONDifferentialTests {
    /// The corpus lines, before mutation.
    static func corpus() throws -> [[UInt8]] {
        var lines: [String] = []
        lines += try String(contentsOfFile: Fixtures.path("eight-hours-asleep.jsonl"), encoding: .utf8).split(separator: "\n").map(String.init)
        var logs = Fixtures.files(in: Fixtures.hotplugLogs)
        logs += Fixtures.files(in: SharedFolder.hotplugLogs)   // none where ../shared is absent
        for log in logs where log.contains("udevadm-monitor") {
            lines += try UdevadmImporter().importLog(path: log).records.map(\.jsonLine)
        }
        var replayer = TracePlayback()
        var output = ReplayOutput()
        for record in TraceGenerator(.init(seed: 7, events: 400, devices: 5, buses: 2, snapshotInterval: 50)) {
            lines.append(record.jsonLine)
            for event in replayer.apply(record) { output.append(event) }
        }
        output.appendFinal(replayer.registry.accessories)
        lines += output.string.split(separator: "\n").map(String.init)
        // Hand-picked edges: escapes, surrogates, numbers, nesting, whitespace.
        lines += [
            #"{"a":"\u00e9\ud83d\ude00\n\t\"\\\/"}"#, #"[1,-0,0.5,1e3,-2.5E-3,12345678901234567890]"#, #"{"a":{"b":[[],{}]}}"#,
            " \t{ \"k\" : [ true , false , null ] } ", #"{"dup":1,"dup":2}"#, #""\ud800""#, #"[01]"#, #"[1.]"#, #"[.5]"#,
            #"{"a":1,}"#, #"[1,]"#, #"{"a" 1}"#, #"tru"#, #"nul"#, "\"\u{7f}\"", "\"a\u{1}b\"", #"[1e400]"#, #"-"#, #"{}"#,
        ]
        return lines.map { Array($0.utf8) }
    }

    /// Seeded mutations: a byte changed, removed or duplicated, a JSON token inserted, a cut.
    static func mutations(of line: [UInt8], _ rng: inout SplitMix64) -> [[UInt8]] {
        guard !line.isEmpty else { return [] }
        let tokens: [[UInt8]] = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "e", "-", "0", "1.5", "null", " ", "\u{ff}"].map { Array($0.utf8) }
        var out: [[UInt8]] = []
        for _ in 0..<4 {
            var m = line
            let i = Int(rng.next() % UInt64(m.count))
            switch rng.next() % 5 {
            case 0: m[i] = UInt8(truncatingIfNeeded: rng.next())
            case 1: m.remove(at: i)
            case 2: m.insert(m[i], at: i)
            case 3: m.insert(contentsOf: tokens[Int(rng.next() % UInt64(tokens.count))], at: i)
            default: m = Array(m.prefix(i))
            }
            out.append(m)
        }
        return out
    }

    /// A parsed value as Foundation values, the last of repeated keys winning as in
    /// `JSONSerialization`, for comparing the two.
    static func foundation(_ v: JSONValue) -> NSObject {
        switch v {
        case .null: return NSNull()
        case .bool(let b): return NSNumber(value: b)
        case .int(let i): return NSNumber(value: i)
        case .double(let d): return NSNumber(value: d)
        case .string(let s): return NSString(string: s)
        case .array(let a): return NSArray(array: a.map(foundation))
        case .object(let members):
            let d = NSMutableDictionary()
            for m in members { d[m.key] = foundation(m.value) }
            return d
        }
    }

    static func holdsInfinity(_ v: JSONValue) -> Bool {
        switch v {
        case .double(let d): return d.isInfinite
        case .array(let a): return a.contains(where: holdsInfinity)
        case .object(let m): return m.contains { holdsInfinity($0.value) }
        default: return false
        }
    }

    /// Whether a comma is followed (after blanks) by `]` or `}` outside strings.
    static func hasTrailingComma(_ bytes: [UInt8]) -> Bool {
        var inString = false, escaped = false, lastSignificant: UInt8 = 0
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            if b == UInt8(ascii: "\"") { inString = true; lastSignificant = b; continue }
            if b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d { continue }
            if (b == UInt8(ascii: "]") || b == UInt8(ascii: "}")) && lastSignificant == UInt8(ascii: ",") { return true }
            lastSignificant = b
        }
        return false
    }

    @Test("Over the corpus and 4 seeded mutations of each line: the same lines accepted, the same values read")
    func differential() throws {
        var rng = SplitMix64(seed: 0x15)
        var inputs: [[UInt8]] = []
        for line in try Self.corpus() {
            inputs.append(line)
            inputs += Self.mutations(of: line, &rng)
        }
        var accepted = 0, rejected = 0
        var disagreements: [String] = []
        for bytes in inputs {
            let ours = try? JSONLine.parse(bytes)
            let theirs = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            switch (ours, theirs) {
            case (nil, nil):
                rejected += 1
            case (let v?, let t?):
                accepted += 1
                if !Self.foundation(v).isEqual(t) { disagreements.append("values differ: \(String(decoding: bytes, as: UTF8.self))") }
            case (let v?, nil) where Self.holdsInfinity(v):
                // A number beyond Double's range (1e400): ours reads it as infinity so that the
                // trace reader can name the field that may not be infinite; Foundation refuses
                // the whole line.
                accepted += 1
            case (_?, nil):
                disagreements.append("only ours accepts: \(String(decoding: bytes, as: UTF8.self))")
            case (nil, _?) where Self.hasTrailingComma(bytes):
                // swift-corelibs-foundation accepts `[1,]` and `{"a":1,}`; RFC 8259 does not,
                // and neither does the trace format.
                rejected += 1
            case (nil, _?):
                disagreements.append("only JSONSerialization accepts: \(String(decoding: bytes, as: UTF8.self))")
            }
        }
        #expect(accepted > 1000 && rejected > 1000, "the corpus exercises both sides: \(accepted) accepted, \(rejected) rejected")
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(inputs.count) disagree; first: \(disagreements.prefix(8))")
    }
}
