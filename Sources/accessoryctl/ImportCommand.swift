import AccessoryCore
import AccessoryTraces
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert a log from another tool into a hotplug trace.",
        subcommands: [Udevadm.self])

    struct Udevadm: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "udevadm",
            abstract: "Convert `udevadm monitor` output (plain, --property or --environment) into a trace.",
            discussion: """
                Only add and remove events of USB devices are kept; the KERNEL and UDEV copies of one \
                event become one trace event. Fields the log does not give are left out, never invented. \
                Pasted logs with '> ' quote prefixes, shell prompts and the monitor banner are accepted.

                Examples:
                  udevadm monitor --kernel --udev --property --subsystem-match=usb > usb.log
                  accessoryctl import udevadm usb.log -o usb.jsonl
                  accessoryctl import udevadm usb.log | accessoryctl replay -
                """)

        @Argument(help: "The udevadm monitor log.")
        var log: String

        @Option(name: .shortAndLong, help: "Write the trace here instead of standard output.")
        var output: String?

        func run() throws {
            OutputStream.ignoreSigpipe()
            var reader: UdevadmReader
            do {
                reader = try UdevadmReader(path: log)
            } catch {
                note("error: \(error)")
                throw ExitCode(1)
            }
            // The output is opened at the first record (or at the end of an empty log), so
            // a file that is not a log leaves no trace file behind.
            var output = ImportOutput(path: output, source: "accessoryctl import udevadm \(log)")
            var count = 0
            do {
                while let record = try reader.next() {
                    try output.write(record)
                    count += 1
                }
                try output.finish()
            } catch let error as TraceError {
                note("error: \(error)")
                throw ExitCode(1)
            } catch let error as TraceSinkError where error.isBrokenPipe {
                return
            } catch let error as ImportOutput.OpenError {
                note("error: \(error.message)")
                throw ExitCode(1)
            } catch {
                note("error: writing the trace: \(error)")
                throw ExitCode(1)
            }
            for warning in reader.warnings { note("warning: \(warning)") }
            note("imported \(count) USB device event\(count == 1 ? "" : "s") from \(log)")
        }
    }
}

/// Where `import` writes its trace: standard output or a file, opened at the first write.
private struct ImportOutput {
    struct OpenError: Error {
        var message: String
    }

    let path: String?
    let source: String
    private var writer: TraceWriter<FileDescriptorSink>?
    private var fd: Int32 = -1

    init(path: String?, source: String) {
        self.path = path
        self.source = source
    }

    mutating func write(_ record: TraceRecord) throws {
        if writer == nil { try start() }
        try writer!.write(record)
    }

    mutating func finish() throws {
        if writer == nil { try start() }
        try writer!.flush()
        if fd > 1 { close(fd) }
    }

    private mutating func start() throws {
        fd = 1
        if let path {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            if fd < 0 { throw OpenError(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
        }
        writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: fd), flushesEachRecord: false)
        try writer!.writeHeader(TraceHeader(source: source))
    }
}
