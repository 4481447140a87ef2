import AccessoryCore
import AccessoryKit
import ArgumentParser

struct PowerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "power",
        abstract: "Switch one hub port's power off, on, or off and on again, as uhubctl does.",
        discussion: """
            PORT is the port chain of what plugs in there (1-1.4; 1-3 is root port 3 of bus 1). \
            The port is switched through its sysfs 'disable' file where the kernel has one (Linux \
            6.0 and later: the kernel then keeps it off), else with the hub's PORT_POWER feature \
            (a hub class request), and so is its peer on the other half of a USB 3 hub. A hub \
            that switches its ports together (ganged) or not at all is refused, by name. Writing \
            'disable' is root's unless a udev rule grants it (the error gives one). 'cycle' waits \
            --pause seconds between off and on. Exit status 0 when switched, 1 when not, 64 on \
            bad usage.

            Examples:
              accessoryctl power 1-1.4 cycle
              accessoryctl power 1-1.4 off --pause 0
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable { case off, on, cycle }

    @Argument(help: "The port: a port chain such as 1-1.4.")
    var port: String

    @Argument(help: "off, on or cycle.")
    var action: Action

    @Option(help: "cycle: seconds between off and on.")
    var pause: Double = 2

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        let parts = port.split(separator: "-", maxSplits: 1)
        guard parts.count == 2, Int(parts[0]) != nil,
              parts[1].split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ Int($0).map { $0 > 0 } ?? false })
        else { throw ValidationError("'\(port)' is not a port chain (like 1-1.4 or 1-3)") }
        try GlobalOptions.validateSeconds(pause, option: "--pause", allowsZero: true, atMost: 3600)
    }

    func run() async throws {
        global.bootstrapLogging()
        let manager = try await global.startManager()
        let out = OutputStream(fd: 1, lineBuffered: true)
        do throws(AccessoryError) {
            let reports: [PortPowerReport]
            switch action {
            case .off: reports = [try await manager.setPortPower(port, on: false)]
            case .on: reports = [try await manager.setPortPower(port, on: true)]
            case .cycle:
                reports = try await manager.cyclePortPower(port, pause: .milliseconds(Int64((pause * 1000).rounded())))
            }
            for r in reports {
                out.writeLine("port \(r.port) (hub \(r.hub)) \(r.on ? "on" : "off") via \(r.method.rawValue)" + (r.peer.map { ", USB 3 peer \($0) too" } ?? ""))
            }
        } catch {
            note("error: \(error.message)")
            await manager.shutdown()
            throw ExitCode(1)
        }
        await manager.shutdown()
    }
}
