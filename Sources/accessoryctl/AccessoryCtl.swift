import ArgumentParser

@main
struct AccessoryCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessoryctl",
        abstract: "Find, watch and talk to USB accessories.",
        discussion: """
            Exit status: 0 on success; 1 when the operation failed (a bad trace, an accessory that \
            went away, permission denied, a doctor check that blocks use); 64 for bad usage.
            """,
        version: "0.1.0",
        subcommands: [ListCommand.self, WatchCommand.self, RecordCommand.self, ReplayCommand.self, DoctorCommand.self, ImportCommand.self, UdevRuleCommand.self, OpenCommand.self, ControlCommand.self, DescribeCommand.self, AOACommand.self, CaptureCommand.self, HubsCommand.self, PowerCommand.self, RecoverCommand.self]
    )
}
