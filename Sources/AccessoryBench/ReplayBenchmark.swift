import AccessoryCore
import AccessoryTraces
import Foundation

/// Replays a generated trace with `accessoryctl replay --json` and parses the same file with
/// `jq -c .`, side by side, as whole processes.
struct ReplayBenchmark {
    var accessoryctl: String
    var events: Int
    var devices: Int
    var snapshotInterval: Int
    var runs: Int

    func run(in dir: URL) throws -> [String] {
        let trace = dir.appendingPathComponent("bench-\(events).jsonl").path
        let size = try generate(to: trace)
        var rows: [String] = []
        let m = ProcessRunner.medians(runs: runs, [
            [accessoryctl, "replay", trace, "--json"],
            [accessoryctl, "replay", trace, "--json", "--faults", "drop=0.05,dup=0.05,reorder=0.05", "--seed", "1"],
            ["jq", "-c", ".", trace],
        ])
        let (ours, faulted, jq) = (m[0], m[1], m[2])
        precondition(ours.status == 0 && jq.status == 0 && faulted.status == 0, "a benchmark process failed")
        let mb = Double(size) / 1e6
        func row(_ name: String, _ m: ProcessRunner.Measurement) -> String {
            String(format: "| %@ | %d | %.1f | %.2f | %.2f | %.0f | %.1f | %.2f |", name, events, mb, m.wall, m.cpu,
                   Double(events) / m.wall, Double(m.maxRSSKiB) / 1024, m.wall / jq.wall)
        }
        rows.append(row("accessoryctl replay --json", ours))
        rows.append(row("accessoryctl replay --json --faults …", faulted))
        rows.append(row("jq -c . (baseline)", jq))
        // Parsing alone, in this process: the hand-written reader against Foundation's
        // JSONDecoder decoding each line into a Codable record (what it would replace).
        let reader = Self.timed { var r = try TraceReader(path: trace); var n = 0; while try r.next() != nil { n += 1 }; return n }
        let decoder = Self.timed { try Self.decodeWithFoundation(trace) }
        rows.append(String(format: "| parse only: TraceReader (in process) | %d | %.1f | %.2f | – | %.0f | – | %.2f |", reader.count, mb, reader.seconds, Double(reader.count) / reader.seconds, reader.seconds / jq.wall))
        rows.append(String(format: "| parse only: Foundation JSONDecoder (in process) | %d | %.1f | %.2f | – | %.0f | – | %.2f |", decoder.count, mb, decoder.seconds, Double(decoder.count) / decoder.seconds, decoder.seconds / jq.wall))
        // BENCH_KEEP_TRACE=1 keeps the trace, for profiling (`perf record accessoryctl replay …`).
        if ProcessInfo.processInfo.environment["BENCH_KEEP_TRACE"] == nil {
            try? FileManager.default.removeItem(atPath: trace)
        } else {
            FileHandle.standardError.write(Data("replay: kept \(trace)\n".utf8))
        }
        return rows
    }

    /// Runs `body` once and returns what it counted and its wall time.
    static func timed(_ body: () throws -> Int) -> (count: Int, seconds: Double) {
        let start = ContinuousClock.now
        let count = (try? body()) ?? -1
        let d = ContinuousClock.now - start
        return (count, Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    /// One trace line as a Codable value: every field a record can have.
    struct CodableRecord: Decodable {
        struct Device: Decodable {
            var bus: Int
            var address: Int?
            var port: String?
            var vendor: String?
            var product: String?
            var bcdDevice: String?
            var serial: String?
            var manufacturer: String?
            var name: String?
            var protocols: [String]?
        }
        var t: Double?
        var event: String?
        var bus: Int?
        var address: Int?
        var port: String?
        var vendor: String?
        var product: String?
        var bcdDevice: String?
        var serial: String?
        var manufacturer: String?
        var name: String?
        var protocols: [String]?
        var devices: [Device]?
        var format: String?
        var source: String?
    }

    /// Decodes every line of `path` with one `JSONDecoder`; returns the records decoded.
    static func decodeWithFoundation(_ path: String) throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let decoder = JSONDecoder()
        var n = 0
        var start = data.startIndex
        while start < data.endIndex {
            let end = data[start...].firstIndex(of: 10) ?? data.endIndex
            if end > start {
                _ = try decoder.decode(CodableRecord.self, from: data[start..<end])
                n += 1
            }
            start = end + 1
        }
        return n - 1  // the header line
    }

    static let header = """
        | command | events | MB | wall s | CPU s | events/s | peak RSS MiB | wall ÷ jq |
        |---|---:|---:|---:|---:|---:|---:|---:|
        """

    private func generate(to path: String) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: handle.fileDescriptor), flushesEachRecord: false)
        try writer.writeHeader(TraceHeader(source: "accessory-bench"))
        let config = TraceGenerator.Configuration(
            seed: 42, events: events, devices: devices, buses: 4, snapshotInterval: snapshotInterval)
        for record in TraceGenerator(config) { try writer.write(record) }
        try writer.flush()
        return Int((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0)
    }
}
