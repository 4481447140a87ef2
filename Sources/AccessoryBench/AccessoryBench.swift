import Foundation
import Logging

/// `accessory-bench`: the project's benchmarks, each side by side with its baseline in one run.
///
///     accessory-bench replay [--events N] [--devices N] [--runs N]
///     accessory-bench hotplug [--cycles N]            (under accessory-sim)
///     accessory-bench list [--devices N] [--runs N]   (under accessory-sim)
///     accessory-bench soak [--cycles N] [--sample-every N] [--warm-up N] [--rss-bound-mib N] [--tolerate-races]   (under accessory-sim)
///     accessory-bench session [--megabytes N] [--pipe-megabytes N] [--pipe-runs N] [--round-trips N] [--runs N] [--profile calls|streams|async|capture] [--capture-dirs DIR,DIR]   (under accessory-sim)
///     accessory-bench capture [--source FILE] [--megabytes N] [--runs N]   (needs tshark)
///
/// `ACCESSORY_BENCH_LOG=debug` (or any swift-log level) shows the library's log on stderr.
@main
struct AccessoryBench {
    /// Runs the benchmark asked for; an error ends the process with its message and exit 1,
    /// not a crash report.
    static func main() async {
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("accessory-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["ACCESSORY_BENCH_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
            return handler
        }
        var args = Array(CommandLine.arguments.dropFirst())
        guard let what = args.first else {
            print("""
                usage: accessory-bench replay [--events N] [--devices N] [--snapshot-interval N] [--runs N]
                       accessory-bench hotplug [--cycles N]      (under accessory-sim)
                       accessory-bench list [--devices N] [--runs N]   (under accessory-sim)
                       accessory-bench soak [--cycles N] [--sample-every N] [--warm-up N] [--rss-bound-mib N] [--tolerate-races]   (under accessory-sim)
                       accessory-bench session [--megabytes N] [--pipe-megabytes N] [--pipe-runs N] [--round-trips N] [--runs N] [--profile calls|streams|async|capture] [--capture-dirs DIR,DIR]   (under accessory-sim)
                       accessory-bench capture [--source FILE] [--megabytes N] [--runs N]   (needs tshark)
                """)
            exit(64)
        }
        args.removeFirst()
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
            return v
        }
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let accessoryctl = ProcessInfo.processInfo.environment["ACCESSORYCTL"] ?? bin.appendingPathComponent("accessoryctl").path
        let dir = URL(fileURLWithPath: NSTemporaryDirectory())
        switch what {
        case "replay":
            let bench = ReplayBenchmark(
                accessoryctl: accessoryctl, events: option("--events", 1_000_000), devices: option("--devices", 100),
                snapshotInterval: option("--snapshot-interval", 1000), runs: option("--runs", 3))
            print(ReplayBenchmark.header)
            for row in try bench.run(in: dir) { print(row) }
        case "hotplug":
            let c = ProcessInfo.processInfo.environment["BENCH_C_DIR"].map { $0 + "/hotplug_latency" } ?? "\(bin.path)/../bench/hotplug_latency"
            for row in try await HotplugBenchmark(cClient: c, cycles: option("--cycles", 200)).run() { print(row) }
        case "list":
            for row in try ListBenchmark(accessoryctl: accessoryctl, devices: option("--devices", 32), runs: option("--runs", 30)).run() { print(row) }
        case "session":  // under accessory-sim; C client from benchmarks/c/build.sh
            let c = ProcessInfo.processInfo.environment["BENCH_C_DIR"].map { $0 + "/bulk_echo" } ?? "\(bin.path)/../bench/bulk_echo"
            for row in try await SessionBenchmark(cClient: c, accessoryctl: accessoryctl, megabytes: option("--megabytes", 64), pipeMegabytes: option("--pipe-megabytes", 32), roundTrips: option("--round-trips", 1000), runs: option("--runs", 5), pipeRuns: option("--pipe-runs", option("--runs", 5)),
                profile: args.firstIndex(of: "--profile").flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil },
                captureFolders: args.firstIndex(of: "--capture-dirs").flatMap { $0 + 1 < args.count ? args[$0 + 1].split(separator: ",").map(String.init) : nil }
            ).run() { print(row) }
        case "capture":  // a real capture's sections, concatenated, against tshark
            var source = CaptureBenchmark.defaultSource
            if let i = args.firstIndex(of: "--source"), i + 1 < args.count { source = args[i + 1] }
            guard FileManager.default.fileExists(atPath: source) else {
                print("capture: skipped: no source capture at \(source) (../shared/captures is not shipped with the package; give --source FILE)")
                return
            }
            let bench = CaptureBenchmark(accessoryctl: accessoryctl, source: source, megabytes: option("--megabytes", 100), runs: option("--runs", 3))
            for row in try bench.run(in: dir) { print(row) }
        case "soak":  // under accessory-sim, with no accessory plugged in
            let soak = SoakBenchmark(
                cycles: option("--cycles", 10_000), sampleEvery: option("--sample-every", 1000), warmUp: option("--warm-up", 200),
                rssBoundMiB: option("--rss-bound-mib", 8), tolerateRaces: args.contains("--tolerate-races"))
            do {
                guard try await soak.run() else { exit(1) }
            } catch {
                print("soak: FAILED: \(error)")
                exit(1)
            }
        default:
            print("unknown benchmark \(what)")
            exit(64)
        }
    }
}
