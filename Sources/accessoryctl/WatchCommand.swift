import AccessoryCore
import AccessoryKit
import AccessoryMetrics
import AccessoryTraces
import ArgumentParser
import Dispatch
import Glibc
import ProcessSignals

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a line for every accessory connected now, then every connect and disconnect, with reasons.",
        discussion: """
            Runs until Ctrl-C or SIGTERM, then shuts the manager down (each accessory is reported \
            disconnected with reason shutdown) and exits 0, within 3 s even when nobody reads its \
            output. In a storm, notices that come within --batch (10 ms) of the last batch \
            wait for it to end and are handled together: one wake-up for many, and an \
            instance that is gone again by then is not announced. Output is flushed line \
            by line; when \
            the reader of the pipe goes away, the next write ends the tool quietly. A reader \
            that falls more than 65,536 lines behind gets, instead of the lines it missed, the \
            difference (each accessory that left, with its reason, then each that is new), and a \
            note on standard error.

            Examples:
              accessoryctl watch
              accessoryctl watch --json | jq -c 'select(.notification == "disconnected")'
              accessoryctl watch --json | head -1
              accessoryctl watch --metrics 127.0.0.1:9464   # Prometheus scrapes /metrics
              accessoryctl watch --recover --recover-vanished 10

            With --recover, the manager recovers accessories by itself (RecoveryPolicy's \
            defaults: after 3 transfer timeouts in a row in its sessions, up to a power cycle, at \
            most 3 times per port per hour); --recover-vanished SECONDS also power-cycles a port \
            whose accessory left and that nothing replaced for that long. watch opens no session \
            itself, so in watch the vanished accessories are what it recovers. Each recovery \
            prints a line (with --json, one object shaped like 'recover --json' with \
            "notification": "recovery", its trigger and port, and "skipped" when the port's \
            budget did not allow it).

            With --metrics, Prometheus metrics (text format 0.0.4) are served over HTTP at \
            http://HOST:PORT/metrics while watch runs (port 0: a free port; standard error says \
            which): accessory_connected, accessory_disconnects_total, \
            accessory_hotplug_events_total, accessory_sessions_open, accessory_recoveries_total \
            and accessory_recovery_seconds. A port in use ends watch with status 1.
            """)

    @Flag(help: "Print the notification lines of the trace format's replay output (AccessoryTraces.docc/TraceFormat.md).")
    var json = false

    /// How many lines may wait for a slow reader before they collapse into the difference
    /// (hidden: tests make it small).
    @Option(help: .hidden) var backlog = 65_536

    /// A person reads these lines: 10 ms more in a storm costs nothing visible, and the manager
    /// and the printer then wake once per batch, not once per notice
    /// (`AccessoryManager.Configuration.hotplugBatching`).
    @Option(name: .customLong("batch"), help: ArgumentHelp(
        "In a storm, handle hotplug notices that come within this many seconds of the last batch together (0: each at once).",
        valueName: "seconds"))
    var batch = 0.01

    @Option(help: ArgumentHelp(
        "Serve Prometheus metrics at http://HOST:PORT/metrics (HOST an IPv4 address, [IPv6] or a name; PORT 0 picks a free one).",
        valueName: "HOST:PORT"))
    var metrics: String?

    @Flag(help: "Recover accessories automatically (after 3 transfer timeouts in a row, up to a power cycle, at most 3 per port per hour).")
    var recover = false

    @Option(name: .customLong("recover-up-to"), help: ArgumentHelp("With --recover: the last step tried: reset, reauthorize or power-cycle.", valueName: "step"))
    var recoverUpTo: String?

    @Option(name: .customLong("recover-vanished"), help: ArgumentHelp(
        "With --recover: power-cycle the port of an accessory that left and stayed away this many seconds.", valueName: "seconds"))
    var recoverVanished: Double?

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard backlog > 0 else { throw ValidationError("--backlog must be at least 1") }
        try GlobalOptions.validateSeconds(batch, option: "--batch", allowsZero: true, atMost: 1)
        do {
            _ = try RecoveryPolicy.fromOptions(recover: recover, upTo: recoverUpTo, vanishedSeconds: recoverVanished)
        } catch {
            throw ValidationError(error.description)
        }
        if let metrics {
            do {
                _ = try MetricsAddress(parsing: metrics)
            } catch {
                throw ValidationError("--metrics: \(error)")
            }
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        OutputStream.ignoreSigpipe()
        let signals = TerminationSignals.catchAll()
        let manager = try await global.startManager(recovery: policy, hotplugBatching: .nanoseconds(Int64((batch * 1e9).rounded())))
        let reports = manager.recoveries()
        let server = try await serveMetrics(of: manager)
        // Bounded: a reader that stops reading costs at most `backlog` waiting lines, not
        // memory without end. Past that, the lines it missed collapse into the difference.
        let updates = await manager.updates(includingCurrent: true, bufferLimit: backlog)
        let (json, backlog) = (self.json, self.backlog)
        let printer = Task {
            let out = OutputStream(fd: 1, lineBuffered: true)
            let style = TerminalStyle(fd: 1)
            if !json { out.writeLine(style.bold("TIME          " + EventText.header)) }
            for await update in updates {
                guard case .event(let event) = update else {
                    // The stdout lines stay those of the trace format's replay output; the ones after this note
                    // bring the reader's list up to date.
                    if case .resynchronized(let missed) = update {
                        note("accessoryctl watch: output fell behind by more than \(backlog) lines; \(missed) were dropped, and the lines that follow are the difference (each accessory that left, with its reason, then each that is new)")
                    }
                    continue
                }
                if json {
                    out.writeLine(ReplayOutput.line(for: event))
                } else {
                    out.writeLine(EventText.line(event, style: style, prefix: Self.clock() + "  "))
                }
            }
        }
        let reportPrinter = Task {
            let out = OutputStream(fd: 1, lineBuffered: true)
            for await report in reports { out.writeLine(Self.line(report, json: json)) }
        }
        for await _ in signals { break }
        // A reader that stopped reading must not keep the tool alive: the printer may be
        // blocked in write(2) with a backlog. Shutdown and the last lines get 3 s.
        let watchdog = DispatchWorkItem {
            note("accessoryctl watch: standard output is not being read; exiting without the lines it did not take")
            _exit(0)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 3, execute: watchdog)
        await manager.shutdown()
        await printer.value
        await reportPrinter.value
        server?.stop()
        watchdog.cancel()
    }

    /// With --metrics: records `manager`'s metrics and serves them, and says where on
    /// standard error. A host that does not resolve is a usage error (64); a port in use
    /// ends the tool with status 1.
    func serveMetrics(of manager: AccessoryManager) async throws -> MetricsServer? {
        guard let metrics, let address = try? MetricsAddress(parsing: metrics) else { return nil }
        let recorder = AccessoryMetrics()
        Task { await recorder.observe(manager) }
        do {
            let server = try recorder.serve(manager, at: address)
            note("accessoryctl watch: serving metrics at http://\(server.address)/metrics")
            return server
        } catch {
            await manager.shutdown()
            if error.isUsage { throw ValidationError("--metrics: \(error)") }
            note("accessoryctl watch: \(error)")
            throw ExitCode(1)
        }
    }

    /// The policy of --recover, or `nil`.
    var policy: RecoveryPolicy? {
        // validate() has refused every option this would throw for.
        try? RecoveryPolicy.fromOptions(recover: recover, upTo: recoverUpTo, vanishedSeconds: recoverVanished)
    }

    /// A recovery report's line: the time, the port, the trigger, each step and the outcome;
    /// with `json`, `recover --json`'s object with the notification, trigger, port and skip.
    static func line(_ report: RecoveryReport, json: Bool) -> String {
        if json {
            var extra = [
                ("notification", RecoverCommand.quoted("recovery")), ("trigger", RecoverCommand.quoted(report.trigger)),
                ("port", RecoverCommand.quoted(report.port)),
            ]
            if let skipped = report.skipped { extra.append(("skipped", RecoverCommand.quoted(skipped))) }
            return RecoverCommand.json(report, extra: extra)
        }
        let steps = report.skipped.map { "skipped: \($0)" } ?? report.steps.map { "\($0.step.name): \($0.outcome)" }.joined(separator: "; ")
        return "\(clock())  recovery on \(report.port) (\(report.trigger)): \(steps); \(RecoverCommand.outcome(report))"
    }

    /// The wall-clock time of day, `HH:MM:SS.mmm`.
    static func clock() -> String {
        var tv = timeval()
        gettimeofday(&tv, nil)
        var t = time_t(tv.tv_sec)
        var parts = tm()
        localtime_r(&t, &parts)
        return [Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec)].map { TextFormat.zeroPadded($0, width: 2) }.joined(separator: ":")
            + "." + TextFormat.zeroPadded(Int(tv.tv_usec / 1000), width: 3)
    }
}
