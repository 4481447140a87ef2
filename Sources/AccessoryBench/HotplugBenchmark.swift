import AccessoryCore
import AccessoryKit
import Foundation
import Synchronization

/// Hotplug latency, from the simulator's `plug` to the event, for `AccessoryManager` and for
/// a plain C libusb hotplug client watching the same testbed at the same time.
struct HotplugBenchmark {
    var cClient: String
    var cycles: Int

    /// Events seen, keyed by "kind bus:address", with their CLOCK_MONOTONIC time in ns.
    final class Seen: Sendable {
        let times = Mutex<[String: UInt64]>([:])
        func record(_ key: String, _ ns: UInt64) { times.withLock { $0[key] = $0[key] ?? ns } }
        func time(_ key: String) -> UInt64? { times.withLock { $0[key] } }
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    func run() async throws -> [String] {
        let ours = Seen(), theirs = Seen()
        // The C client, reading its lines on a thread.
        let client = Process()
        client.executableURL = URL(fileURLWithPath: cClient)
        let pipe = Pipe()
        client.standardOutput = pipe
        try client.run()
        let ready = Mutex(false)
        let reader = Thread {
            var pending = Data()
            while true {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                pending += chunk
                while let nl = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[pending.startIndex..<nl], as: UTF8.self)
                    pending = pending[(nl + 1)...]
                    let w = line.split(separator: " ")
                    if line == "ready" { ready.withLock { $0 = true } }
                    if w.count == 4, let ns = UInt64(w[3]) { theirs.record("\(w[0]) \(w[1]):\(w[2])", ns) }
                }
            }
        }
        reader.start()
        while !ready.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        FileHandle.standardError.write(Data("hotplug: C client ready\n".utf8))

        let manager = try await AccessoryManager(configuration: .init(reconcileInterval: .seconds(3600)))
        let events = await manager.events(includingCurrent: false)
        let watcher = Task {
            for await event in events {
                let t = Self.now()
                let d = event.accessory.descriptor
                let kind = { if case .connected = event { "arrived" } else { "left" } }()
                ours.record("\(kind) \(d.bus):\(d.address ?? 0)", t)
            }
        }
        var arrive: [(ours: Double, c: Double)] = []
        var leave: [(ours: Double, c: Double)] = []
        var missed = (ours: 0, c: 0)
        /// Waits up to 2 s for both clients to see `key`; returns whether both did.
        func waitFor(_ key: String) async throws -> Bool {
            let deadline = Self.now() + 2_000_000_000
            while ours.time(key) == nil || theirs.time(key) == nil {
                if Self.now() >= deadline {
                    if ours.time(key) == nil { missed.ours += 1 }
                    if theirs.time(key) == nil { missed.c += 1 }
                    return false
                }
                try await Task.sleep(for: .microseconds(200))
            }
            return true
        }
        for i in 0..<cycles {
            let t0 = Self.now()
            guard let (bus, address) = SimulatorControl.instance(try SimulatorControl.send("plug 1209:0100:HP\(i)")) else { continue }
            let key = "\(bus):\(address)"
            if try await waitFor("arrived \(key)") {
                arrive.append((Double(ours.time("arrived \(key)")! - t0) / 1e6, Double(theirs.time("arrived \(key)")! - t0) / 1e6))
            }
            let t1 = Self.now()
            _ = try SimulatorControl.send("unplug \(key)")
            if try await waitFor("left \(key)") {
                leave.append((Double(ours.time("left \(key)")! - t1) / 1e6, Double(theirs.time("left \(key)")! - t1) / 1e6))
            }
            // Forget this address: it will be reused after the wrap.
            ours.times.withLock { $0["arrived \(key)"] = nil; $0["left \(key)"] = nil }
            theirs.times.withLock { $0["arrived \(key)"] = nil; $0["left \(key)"] = nil }
        }
        FileHandle.standardError.write(Data("hotplug: \(arrive.count) cycles done\n".utf8))
        await manager.shutdown()
        watcher.cancel()
        // Process.waitUntilExit can wait on a run loop that never turns inside async code.
        kill(client.processIdentifier, SIGKILL)  // its measurements are in; Process may leave SIGTERM blocked in the child
        var status: Int32 = 0
        waitpid(client.processIdentifier, &status, 0)

        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        func p90(_ xs: [Double]) -> Double { xs.sorted()[min(xs.count - 1, xs.count * 9 / 10)] }
        func row(_ what: String, _ samples: [(ours: Double, c: Double)]) -> String {
            let gaps = samples.map { $0.ours - $0.c }
            return String(format: "| %@ | %d | %.3f | %.3f | %.3f | %.3f | %.3f |", what, samples.count,
                          median(samples.map(\.c)), median(samples.map(\.ours)), median(gaps), p90(gaps), gaps.max() ?? 0)
        }
        return [
            "| event | cycles | C libusb client median ms | AccessoryManager median ms | median gap ms | p90 gap ms | max gap ms |",
            "|---|---:|---:|---:|---:|---:|---:|",
            row("plug → connected", arrive),
            row("unplug → disconnected", leave),
            "",
            "Events not seen within 2 s: AccessoryManager \(missed.ours), C client \(missed.c) (of \(cycles * 2)).",
        ]
    }
}
