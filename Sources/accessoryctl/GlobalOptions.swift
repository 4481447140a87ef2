import AccessoryKit
import ArgumentParser
import Logging

/// Options every live command shares.
struct GlobalOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log what the manager does to stderr (twice for trace level).")
    var verbose: Int

    @Option(help: "Seconds between periodic reconciles with sysfs.")
    var reconcileInterval: Double = 2

    @Option(help: ArgumentHelp(
        "Protocol rules: a JSON array such as [{\"vendor\": \"06cb\", \"product\": \"00bd\", \"interface\": 0, \"protocol\": \"com.example.reader\"}] (product and interface optional).",
        valueName: "file"))
    var protocols: String?

    func validate() throws {
        try Self.validateSeconds(reconcileInterval, option: "--reconcile-interval", allowsZero: false, atMost: 86_400)
    }

    /// Refuses a duration in seconds that is not finite, is negative (or zero, unless
    /// allowed), or is longer than `atMost`: a usage error, never a trap converting it.
    static func validateSeconds(_ value: Double, option: String, allowsZero: Bool, atMost limit: Double) throws {
        let low = allowsZero ? value >= 0 : value > 0
        guard value.isFinite, low, value <= limit else {
            throw ValidationError(
                "\(option) must be a number of seconds, \(allowsZero ? "0 or more" : "more than 0") and at most \(Int(limit)); got \(value)")
        }
    }

    /// Sends swift-log output to stderr, at notice level, or lower with --verbose.
    func bootstrapLogging() {
        let level: Logger.Level = verbose >= 2 ? .trace : verbose == 1 ? .debug : .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// Starts a manager, or prints why it cannot start and exits 1.
    func startManager(
        capturePath: String? = nil, recovery: RecoveryPolicy? = nil, hotplugBatching: Duration = .zero
    ) async throws -> AccessoryManager {
        let table = try protocolTable()
        do {
            return try await AccessoryManager(
                configuration: .init(
                    reconcileInterval: interval, protocolTable: table, capturePath: capturePath, recovery: recovery,
                    hotplugBatching: hotplugBatching))
        } catch {
            note("error: \(error)")
            throw ExitCode(1)
        }
    }

    /// The rules of --protocols, or none; prints why the file is refused and exits 1.
    func protocolTable() throws -> ProtocolTable {
        guard let protocols else { return ProtocolTable() }
        do {
            return try ProtocolTable(contentsOf: protocols)
        } catch {
            note("error: \(error.message)")
            throw ExitCode(1)
        }
    }

    var interval: Duration { .milliseconds(Int64((max(reconcileInterval, 0.05) * 1000).rounded())) }
}
