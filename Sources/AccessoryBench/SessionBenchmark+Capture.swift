import AccessoryKit
import Foundation

extension SessionBenchmark {
    /// `--capture-dirs A,B` (issue 33): only the capture cost, the async depth-4 echo through a
    /// manager recording into each folder (a disk, a tmpfs) against the plain manager, in
    /// turn (on first in even rounds, off first in odd ones), `runs` rounds each, median by
    /// time. Both managers live through every round of a folder. Each round then runs the C
    /// client's echo without and with its own capture (`bulk_echo --capture`, one `writev` per
    /// record), in turn too: the cost of writing the same records from plain C, the floor to
    /// hold ours against.
    func captureOnly(_ folders: [String], size: Int, chunk: Int) async throws -> [String] {
        let data = Self.randomBytes(size)
        var rows = [
            "### Capture cost: \(megabytes) MiB echoed at async depth 4, capture off and on alternating (median of \(runs))", "",
            "| capture file in | on MB/s | off MB/s | throughput on ÷ off | CPU on ÷ off | rounds on ÷ off | C: throughput on ÷ off | C: CPU on ÷ off | C: rounds on ÷ off |",
            "|---|---:|---:|---:|---:|---|---:|---:|---|",
        ]
        var details: [String] = []
        for folder in folders {
            let path = URL(fileURLWithPath: folder).appendingPathComponent("session-bench-capture-\(getpid()).pcapng").path
            let cPath = URL(fileURLWithPath: folder).appendingPathComponent("session-bench-capture-c-\(getpid()).pcapng").path
            defer {
                try? FileManager.default.removeItem(atPath: path)
                try? FileManager.default.removeItem(atPath: cPath)
            }
            let cArguments = ["--async", "4", "--size", "\(size)", "--chunk", "\(chunk)"]
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
            var cRounds: [(on: Sample, off: Sample)] = []
            for round in 0..<max(runs, 1) {
                // Each pair in turn: what runs second follows the first's file writes.
                rounds.append(try await Self.inTurn(
                    round: round, { try await Self.echoAsync(capturing, b, data, depth: 4, chunk: chunk) },
                    { try await Self.echoAsync(plain, a, data, depth: 4, chunk: chunk) }))
                cRounds.append(try await Self.inTurn(
                    round: round, { try cEcho(cArguments + ["--capture", cPath]) }, { try cEcho(cArguments) }))
            }
            await capturing.shutdown()
            await plain.shutdown()
            if let error = capturing.captureError { throw Failure(description: "the capture failed: \(error)") }
            let (on, off) = (Self.median(rounds.map(\.on)), Self.median(rounds.map(\.off)))
            let (cOn, cOff) = (Self.median(cRounds.map(\.on)), Self.median(cRounds.map(\.off)))
            let each = { (r: [(on: Sample, off: Sample)]) in
                r.map { String(format: "%.2f", $0.on.megabytesPerSecond / $0.off.megabytesPerSecond) }.joined(separator: ", ")
            }
            rows.append(String(
                format: "| %@ | %.1f | %.1f | **%.2f** | %.2f | %@ | **%.2f** | %.2f | %@ |", folder, on.megabytesPerSecond, off.megabytesPerSecond,
                on.megabytesPerSecond / off.megabytesPerSecond, on.cpu / off.cpu, each(rounds),
                cOn.megabytesPerSecond / cOff.megabytesPerSecond, cOn.cpu / cOff.cpu, each(cRounds)))
            details += ["", "Rounds, capture file in \(folder):", ""] + Self.roundRows(rounds.map { ($0.on, $0.off) }, "on", "off", ratios: ("on ÷ off", "CPU on ÷ off"))
            details += ["", "C rounds, capture file in \(folder):", ""] + Self.roundRows(cRounds.map { ($0.on, $0.off) }, "C on", "C off", ratios: ("on ÷ off", "CPU on ÷ off"))
        }
        return rows + details
    }
}
