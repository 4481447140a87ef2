import AccessoryCore
import AccessoryKit
import AccessoryTraces
import ArgumentParser
import Foundation
import ProcessSignals

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a line for every accessory connected now, then every connect and disconnect, with reasons.",
        discussion: """
            Runs until Ctrl-C or SIGTERM, then shuts the manager down (each accessory is reported \
            disconnected with reason shutdown) and exits 0, within 3 s even when nobody reads its \
            output. Output is flushed line by line; when \
            the reader of the pipe goes away, the next write ends the tool quietly. A reader \
            that falls more than 65,536 lines behind gets, instead of the lines it missed, the \
            difference (each accessory that left, with its reason, then each that is new), and a \
            note on standard error.

            Examples:
              accessoryctl watch
              accessoryctl watch --json | jq -c 'select(.notification == "disconnected")'
              accessoryctl watch --json | head -1
            """)

    @Flag(help: "Print the notification lines of the trace format's replay output (AccessoryTraces.docc/TraceFormat.md).")
    var json = false

    /// How many lines may wait for a slow reader before they collapse into the difference
    /// (hidden: tests make it small).
    @Option(help: .hidden) var backlog = 65_536

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard backlog > 0 else { throw ValidationError("--backlog must be at least 1") }
    }

    func run() async throws {
        global.bootstrapLogging()
        OutputStream.ignoreSigpipe()
        let signals = TerminationSignals.catchAll()
        let manager = try await global.startManager()
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
        watchdog.cancel()
    }

    /// The wall-clock time of day, `HH:MM:SS.mmm`.
    static func clock() -> String {
        var tv = timeval()
        gettimeofday(&tv, nil)
        var t = time_t(tv.tv_sec)
        var parts = tm()
        localtime_r(&t, &parts)
        return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, Int(tv.tv_usec / 1000))
    }
}
