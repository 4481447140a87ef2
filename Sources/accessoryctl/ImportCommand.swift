import AccessoryCore
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
            let result: UdevadmImport
            do {
                result = try UdevadmImporter().importLog(path: log)
            } catch {
                note("error: \(error)")
                throw ExitCode(1)
            }
            for warning in result.warnings { note("warning: \(warning)") }
            var fd: Int32 = 1
            if let output {
                fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if fd < 0 {
                    note("error: cannot write \(output): \(String(cString: strerror(errno)))")
                    throw ExitCode(1)
                }
            }
            defer { if fd != 1 { close(fd) } }
            var writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: fd), flushesEachRecord: false)
            do {
                try writer.writeHeader(TraceHeader(source: "accessoryctl import udevadm \(log)"))
                for record in result.records { try writer.write(record) }
                try writer.flush()
            } catch let error as TraceSinkError where error.isBrokenPipe {
                return
            } catch {
                note("error: writing the trace: \(error)")
                throw ExitCode(1)
            }
            note("imported \(result.records.count) USB device event\(result.records.count == 1 ? "" : "s") from \(log)")
        }
    }
}
