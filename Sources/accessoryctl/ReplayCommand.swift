import AccessoryCore
import AccessoryTraces
import ArgumentParser

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Apply a hotplug trace to a fresh registry and print every notification and the final registry.",
        discussion: """
            The trace format and the --json output are specified in the package's article \
            Sources/AccessoryTraces/AccessoryTraces.docc/TraceFormat.md. A malformed line \
            is an error naming the file, the line and the reason (exit 1); a truncated last line is \
            only a warning.

            Examples:
              accessoryctl replay Tests/Fixtures/eight-hours-asleep.jsonl
              accessoryctl replay trace.jsonl --json | jq -c 'select(.reason == "ghost-evicted")'
              accessoryctl replay trace.jsonl --faults drop=0.1,dup=0.05,reorder=0.1 --seed 7 --json
            """)

    @Argument(help: "The trace file (JSON Lines), or - for standard input.")
    var trace: String

    @Flag(help: "Print JSON Lines as the trace format gives them (AccessoryTraces.docc/TraceFormat.md).")
    var json = false

    @Option(help: "Inject faults first: drop=P,dup=P,reorder=P,delay=P[,wrap] (probabilities 0…1).")
    var faults: String?

    @Option(help: "Seed for --faults.")
    var seed: UInt64 = 1

    func run() throws {
        OutputStream.ignoreSigpipe()
        var injector: FaultInjector?
        if let faults {
            do {
                injector = FaultInjector(try FaultInjector.Configuration(parsing: faults), seed: seed)
            } catch {
                throw ValidationError(error.description)
            }
        }
        var reader: TracePrefetch
        do {
            reader = TracePrefetch(
                trace == "-" ? try TraceReader(fileDescriptor: 0, name: "<stdin>") : try TraceReader(path: trace))
        } catch {
            note("error: \(error)")
            throw ExitCode(1)
        }
        let out = OutputStream(fd: 1, lineBuffered: false)
        let style = TerminalStyle(fd: 1)
        var replayer = TracePlayback()
        var buffer = ReplayOutput()
        let json = self.json  // read once: a property wrapper's getter is not free per event
        if !json { out.writeLine(style.bold(EventText.header)) }
        var pending: [AccessoryEvent] = []
        func emit(_ events: [AccessoryEvent]) {
            guard json else {
                for event in events { out.writeLine(EventText.line(event, style: style)) }
                return
            }
            // Each event is encoded where it lies in the array (borrowed), not copied out.
            events.withUnsafeBufferPointer { events in
                for i in events.indices {
                    buffer.append(events[i])
                    if buffer.count >= 1 << 16 {
                        buffer.withUnsafeBytes { out.write(raw: $0) }
                        buffer.removeAll()
                    }
                }
            }
        }
        do {
            while let record = try reader.next() {
                if injector != nil {
                    injector!.push(record) { emit(replayer.apply($0)) }
                } else {
                    replayer.apply(record, into: &pending)
                    emit(pending)
                    pending.empty()
                }
            }
            injector?.finish { emit(replayer.apply($0)) }
            emit(replayer.finish())
        } catch {
            buffer.withUnsafeBytes { out.write(raw: $0) }
            out.flush()
            note("error: \(error)")
            throw ExitCode(1)
        }
        for warning in reader.warnings { note("warning: \(warning)") }
        let final = replayer.registry.accessories
        if json {
            buffer.appendFinal(final)
            buffer.withUnsafeBytes { out.write(raw: $0) }
        } else {
            out.writeLine(style.bold("final registry: \(final.count) accessor\(final.count == 1 ? "y" : "ies")"))
            for a in final {
                let d = a.descriptor
                out.writeLine("  \(a.connectionID)  \(d.bus):\(d.address.map(String.init) ?? "?")  \(d.port)  \(d.vendorProduct)  \(d.serial ?? "-")")
            }
        }
        out.flush()
    }
}
