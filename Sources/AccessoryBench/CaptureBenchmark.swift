import AccessoryCapture
import Foundation

/// `accessoryctl capture summary FILE --json` against `tshark -r FILE -T fields -e usb.urb_len`,
/// as whole processes, on a capture of about `megabytes` MB of small packets: the pcapng
/// sections of a real capture (`source`), concatenated.
struct CaptureBenchmark {
    var accessoryctl: String
    /// The capture whose sections are repeated (by default ../shared/captures/synaptics).
    var source: String
    var megabytes: Int
    var runs: Int

    /// The default source: the shared Synaptics capture (bulk and interrupt packets of a few
    /// bytes), found from `$ACCESSORY_SHARED` or `../shared` beside the working directory.
    static var defaultSource: String {
        let shared = ProcessInfo.processInfo.environment["ACCESSORY_SHARED"]
            ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath).deletingLastPathComponent().appendingPathComponent("shared").path
        return shared + "/captures/synaptics/custom.pcapng"
    }

    func run(in dir: URL) throws -> [String] {
        let section = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        let copies = max(1, megabytes * 1_000_000 / section.count)
        let file = dir.appendingPathComponent("capture-bench.pcapng").path
        guard FileManager.default.createFile(atPath: file, contents: nil), let handle = FileHandle(forWritingAtPath: file) else {
            throw CocoaError(.fileWriteUnknown)
        }
        // Written 4 MB at a time: a run of whole sections.
        let perWrite = max(1, 4_000_000 / section.count)
        let chunk = Data((0..<perWrite).flatMap { _ in section })
        var left = copies
        while left > 0 {
            let n = min(left, perWrite)
            handle.write(chunk.prefix(n * section.count))
            left -= n
        }
        try handle.close()
        defer { try? FileManager.default.removeItem(atPath: file) }
        var reader = try USBMonReader(path: source)
        var perSection = 0
        while try reader.next() != nil { perSection += 1 }
        let packets = perSection * copies
        let size = Double(section.count * copies) / 1e6

        let m = ProcessRunner.medians(runs: runs, [
            [accessoryctl, "capture", "summary", file, "--json"], ["tshark", "-r", file, "-T", "fields", "-e", "usb.urb_len"],
        ])
        let (ours, tshark) = (m[0], m[1])
        precondition(ours.status == 0, "accessoryctl capture summary failed")
        precondition(tshark.status == 0, "tshark failed (is it installed? scripts/setup installs it)")
        let inProcess = ReplayBenchmark.timed {
            let summary = try USBCaptureSummary(path: file)
            return summary.events
        }
        func row(_ name: String, _ m: ProcessRunner.Measurement) -> String {
            String(format: "| %@ | %.1f | %d | %.3f | %.3f | %.1f | %.4f |", name, size, packets, m.wall, m.cpu,
                   Double(m.maxRSSKiB) / 1024, m.wall / tshark.wall)
        }
        let ratio = ours.wall / tshark.wall
        let rss = Double(ours.maxRSSKiB) / 1024
        return [
            "source: \(source), \(copies) sections of \(section.count) bytes, \(perSection) packets each; median of \(runs) runs",
            "",
            "| command | MB | packets | wall s | CPU s | peak RSS MiB | wall ÷ tshark |",
            "|---|---:|---:|---:|---:|---:|---:|",
            row("accessoryctl capture summary --json", ours),
            row("tshark -T fields -e usb.urb_len (baseline)", tshark),
            String(format: "| parse only: USBCaptureSummary (in process) | %.1f | %d | %.3f | – | – | %.4f |", size, inProcess.count,
                   inProcess.seconds, inProcess.seconds / tshark.wall),
            "",
            String(format: "target ≤ 0.05× tshark: %@ (%.4f×); peak RSS ≤ 64 MiB: %@ (%.1f MiB)",
                   ratio <= 0.05 ? "met" : "NOT MET", ratio, rss <= 64 ? "met" : "NOT MET", rss),
        ]
    }
}
