import AccessoryCore
import AccessoryKit
import AccessoryTraces
import ArgumentParser
import FoundationEssentials

struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Recover a wedged accessory: a port reset, then reauthorization, then a power cycle of its port.",
        discussion: """
            TARGET is VID:PID[:SERIAL] (hex), BUS:ADDRESS or a port chain, as for 'open'. Each \
            step runs only if the one before did not bring the accessory back: back means the \
            same physical accessory on the same port, answering GET_STATUS within 1 s, within \
            5 s of the step. A hub that switches its ports together or not at all is named and \
            its step skipped. --command adds the last step: a program run with ACCESSORY_PORT, \
            ACCESSORY_BUS and ACCESSORY_ADDRESS in its environment. Writing 'authorized' and \
            'disable' is root's unless a udev rule grants it (the error gives one). Prints each \
            step and its outcome, then the accessory as it is now. Exit status 0 when recovered, \
            1 when not, 64 on bad usage.

            Examples:
              accessoryctl recover 1209:0001 --up-to reauthorize
              accessoryctl recover 1-1.4 --json
              accessoryctl recover 1-1.4 --up-to command --command /usr/local/bin/relay-cycle
            """)

    @Argument(help: "The accessory: VID:PID[:SERIAL] (hex), BUS:ADDRESS or a port chain such as 1-1.4.")
    var target: String

    @Option(name: .customLong("up-to"), help: ArgumentHelp("The last step tried: reset, reauthorize, power-cycle or command.", valueName: "step"))
    var upTo: String = "power-cycle"

    @Option(help: ArgumentHelp("The program of the 'command' step, with its arguments in one string split at spaces.", valueName: "command"))
    var command: String?

    @Flag(help: "Print one JSON object: recovered, steps, before and after (an entry as 'list --json' prints it, or null).")
    var json = false

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        _ = try OpenCommand.parse(target)
        guard let step = RecoveryStep(name: upTo) else {
            throw ValidationError("--up-to must be one of \(RecoveryStep.allCases.map(\.name).joined(separator: ", ")), not '\(upTo)'")
        }
        if step == .command, command?.isEmpty ?? true { throw ValidationError("--up-to command needs --command") }
    }

    func run() async throws {
        global.bootstrapLogging()
        let target = try OpenCommand.parse(self.target)
        let last = RecoveryStep(name: upTo) ?? .powerCycle
        let policy = command.map { RecoveryPolicy(upTo: last, command: $0.split(separator: " ").map(String.init)) }
        let manager = try await global.startManager(recovery: policy)
        let out = OutputStream(fd: 1, lineBuffered: true)
        let reports = manager.recoveries()
        var before: Accessory?
        do throws(AccessoryError) {
            let accessory = try await manager.accessory(matching: target)
            before = accessory
            _ = try await manager.recover(accessory, upTo: last)
        } catch {
            if before == nil {
                note("error: \(error.message)")
                await manager.shutdown()
                throw ExitCode(1)
            }
        }
        await manager.shutdown()
        var report: RecoveryReport?
        for await r in reports {
            report = r
            break
        }
        guard let report else { throw ExitCode(1) }
        if json {
            out.writeLine(Self.json(report))
        } else {
            for s in report.steps { out.writeLine("\(s.step.name): \(s.outcome)") }
            out.writeLine(Self.outcome(report))
        }
        if !report.recovered { throw ExitCode(1) }
    }

    /// One JSON object: `recovered`, `steps` (each `step` and `outcome`), `before` and
    /// `after` (entries as `list --json` prints them; `after` is `null` when not recovered),
    /// then `extra` fields (`watch` adds the trigger, the port and a skip).
    static func json(_ report: RecoveryReport, extra: [(String, String)] = []) -> String {
        let steps = report.steps.map { "{\"step\":\(quoted($0.step.name)),\"outcome\":\(quoted($0.outcome))}" }
        return "{\"recovered\":\(report.recovered),\"steps\":[\(steps.joined(separator: ","))],"
            + "\"before\":\(AccessoryListJSON.object(report.before)),"
            + "\"after\":\(report.accessory.map(AccessoryListJSON.object) ?? "null")"
            + extra.map { ",\(quoted($0.0)):\($0.1)" }.joined() + "}"
    }

    /// `recovered: #7 1209:0001 at 1:9 on 1-1.4 (continues #5)`, or `not recovered: …`.
    static func outcome(_ report: RecoveryReport) -> String {
        if let after = report.accessory {
            let d = after.descriptor
            let link = after.connectionID == report.before.connectionID ? "same connection" : "continues #\(report.before.connectionID)"
            return "recovered: #\(after.connectionID) \(d.vendorProduct) at \(d.bus):\(d.address.map(String.init) ?? "?") on \(d.port) (\(link))"
        }
        return "not recovered: \(report.before.descriptor.vendorProduct) on \(report.port)"
    }

    /// A JSON string.
    static func quoted(_ s: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(s)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}
