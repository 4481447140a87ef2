import AccessoryKit
import Foundation

extension SessionBenchmark {
    /// `--capture-dirs A,B` (issue 33): only the capture cost, the async depth-4 echo through a
    /// manager recording into each folder (a disk, a tmpfs) against the plain manager,
    /// alternating off/on, `runs` rounds each, median by time. Both managers live through
    /// every round of a folder.
    func captureOnly(_ folders: [String], size: Int, chunk: Int) async throws -> [String] {
        let data = Self.randomBytes(size)
        var rows = [
            "### Capture cost: \(megabytes) MiB echoed at async depth 4, capture off and on alternating (median of \(runs))", "",
            "| capture file in | on MB/s | off MB/s | throughput on ÷ off | CPU on ÷ off | rounds on ÷ off |",
            "|---|---:|---:|---:|---:|---|",
        ]
        var details: [String] = []
        for folder in folders {
            let path = URL(fileURLWithPath: folder).appendingPathComponent("session-bench-capture-\(getpid()).pcapng").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let plain = try await AccessoryManager()
            let capturing = try await AccessoryManager(configuration: .init(capturePath: path))
            let pick = { (m: AccessoryManager) async in
                await m.connectedAccessories.first { $0.descriptor.vendor == 0x1209 && $0.descriptor.product == 0x0001 }
            }
            guard let a = await pick(plain), let b = await pick(capturing) else {
                await plain.shutdown()
                await capturing.shutdown()
                throw Failure(description: "no accessory 1209:0001 under the simulator")
            }
            var rounds: [(on: Sample, off: Sample)] = []
            for _ in 0..<max(runs, 1) {
                let off = try await Self.echoAsync(plain, a, data, depth: 4, chunk: chunk)
                let on = try await Self.echoAsync(capturing, b, data, depth: 4, chunk: chunk)
                rounds.append((on, off))
            }
            await capturing.shutdown()
            await plain.shutdown()
            if let error = capturing.captureError { throw Failure(description: "the capture failed: \(error)") }
            let (on, off) = (Self.median(rounds.map(\.on)), Self.median(rounds.map(\.off)))
            let each = rounds.map { String(format: "%.2f", $0.on.megabytesPerSecond / $0.off.megabytesPerSecond) }.joined(separator: ", ")
            rows.append(String(
                format: "| %@ | %.1f | %.1f | **%.2f** | %.2f | %@ |", folder, on.megabytesPerSecond, off.megabytesPerSecond,
                on.megabytesPerSecond / off.megabytesPerSecond, on.cpu / off.cpu, each))
            details += ["", "Rounds, capture file in \(folder):", ""] + Self.roundRows(rounds.map { ($0.on, $0.off) }, "on", "off", ratios: ("on ÷ off", "CPU on ÷ off"))
        }
        return rows + details
    }
}
