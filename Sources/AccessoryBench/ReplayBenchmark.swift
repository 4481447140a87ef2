import AccessoryCore
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
        let ours = ProcessRunner.median(runs: runs, [accessoryctl, "replay", trace, "--json"])
        let faulted = ProcessRunner.median(runs: runs, [accessoryctl, "replay", trace, "--json", "--faults", "drop=0.05,dup=0.05,reorder=0.05", "--seed", "1"])
        let jq = ProcessRunner.median(runs: runs, ["jq", "-c", ".", trace])
        precondition(ours.status == 0 && jq.status == 0 && faulted.status == 0, "a benchmark process failed")
        let mb = Double(size) / 1e6
        func row(_ name: String, _ m: ProcessRunner.Measurement) -> String {
            String(format: "| %@ | %d | %.1f | %.2f | %.2f | %.0f | %.1f | %.2f |", name, events, mb, m.wall, m.cpu,
                   Double(events) / m.wall, Double(m.maxRSSKiB) / 1024, m.wall / jq.wall)
        }
        rows.append(row("accessoryctl replay --json", ours))
        rows.append(row("accessoryctl replay --json --faults …", faulted))
        rows.append(row("jq -c . (baseline)", jq))
        try? FileManager.default.removeItem(atPath: trace)
        return rows
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
