import AccessoryCore
import AccessoryKit
import AccessoryTraces
import ArgumentParser
import FoundationEssentials
import Glibc
import ProcessSignals

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record the hotplug monitor's events into a trace file (format: AccessoryTraces.docc/TraceFormat.md).",
        discussion: """
            The trace starts with a snapshot of the accessories present, then holds every add and \
            remove as the monitor applies it, the OS truth (a snapshot) at every reconcile, and \
            sleep/wake when a system sleep is detected. Every event is written and flushed at once, \
            with every field known (serial, strings, protocols). Ctrl-C or SIGTERM takes a last \
            snapshot, closes the file and exits 0; after SIGKILL, at most the last line is cut \
            short, and a reader reports it as a warning.

            Examples:
              accessoryctl record usb.jsonl
              accessoryctl replay usb.jsonl
            """)

    @Argument(help: "The trace file to write (replaced if it exists), or - for standard output.")
    var trace: String

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        global.bootstrapLogging()
        OutputStream.ignoreSigpipe()
        let signals = TerminationSignals.catchAll()
        let fd: Int32 = trace == "-" ? 1 : open(trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            note("error: cannot write \(trace): \(String(cString: strerror(errno)))")
            throw ExitCode(1)
        }
        let manager = try await global.startManager()
        let events = await manager.monitorEvents()
        let started = Date.now.formatted(.iso8601)
        let name = trace
        let recorder = Task { () -> Int in
            var writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: fd), flushesEachRecord: true)
            let start = ContinuousClock.now
            var count = 0
            do {
                try writer.writeHeader(TraceHeader(source: "accessoryctl record", started: started))
                for await event in events {
                    let elapsed = ContinuousClock.now - start
                    let t = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    try writer.write(t: t, event: event)
                    count += 1
                }
            } catch let error as TraceSinkError where error.isBrokenPipe {
                return count
            } catch {
                note("error: writing \(name): \(error)")
            }
            return count
        }
        for await _ in signals { break }
        _ = await manager.refresh()  // the truth at the end, as the last snapshot
        await manager.shutdown()
        let count = await recorder.value
        if fd != 1 { close(fd) }
        note("recorded \(count) event\(count == 1 ? "" : "s") to \(trace)")
    }
}
