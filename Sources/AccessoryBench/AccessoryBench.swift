import Foundation

/// `accessory-bench`: the project's benchmarks, each side by side with its baseline in one run.
///
///     accessory-bench replay [--events N] [--devices N] [--runs N]
@main
struct AccessoryBench {
    static func main() throws {
        var args = Array(CommandLine.arguments.dropFirst())
        guard let what = args.first else {
            print("usage: accessory-bench replay [--events N] [--devices N] [--snapshot-interval N] [--runs N]")
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
        default:
            print("unknown benchmark \(what)")
            exit(64)
        }
    }
}
