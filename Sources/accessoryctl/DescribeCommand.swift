import AccessoryCore
import AccessoryKit
import ArgumentParser
import FoundationEssentials

struct DescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Show a device's configurations, interfaces, alternate settings and endpoints, and the protocol each interface speaks.",
        discussion: """
            TARGET is VID:PID[:SERIAL] (hex), BUS:ADDRESS or a port chain, as for 'open'. Reads \
            sysfs and the binary descriptors only: it opens and claims nothing, so it needs no \
            permissions. An interface's protocols are those that open it under the rules: its \
            string, the rules of --protocols, and the built-in ones. A device whose interfaces \
            carry no string opens with 'open --interface N'.

            Examples:
              accessoryctl describe 1209:0001
              accessoryctl describe 1-1.4 --protocols rules.json --json
            """)

    @Argument(help: "The device: VID:PID[:SERIAL] (hex), BUS:ADDRESS or a port chain such as 1-1.4.")
    var target: String

    @Flag(help: "Print one JSON object: the device, then its configurations with their interfaces and endpoints.")
    var json = false

    @Option(help: ArgumentHelp("Protocol rules, as for 'open --protocols'.", valueName: "file"))
    var protocols: String?

    func validate() throws {
        _ = try OpenCommand.parse(target)
    }

    func run() throws {
        OutputStream.ignoreSigpipe()
        let target = try OpenCommand.parse(self.target)
        let table: ProtocolTable
        do {
            table = try protocols.map { (path) throws(AccessoryError) in try ProtocolTable(contentsOf: path) } ?? ProtocolTable()
        } catch {
            note("error: \(error.message)")
            throw ExitCode(1)
        }
        let root = ProcessInfo.processInfo.environment["ACCESSORYKIT_SYSFS_ROOT"] ?? SysfsScanner.defaultRoot
        let result = SysfsScanner(root: root, includeHubs: true, protocolTable: table).scan()
        if let failure = result.failure {
            note("error: sysfs could not be read: \(failure)")
            throw ExitCode(1)
        }
        var registry = ConnectionRegistry()
        let matches = result.devices.filter { target.matches(registry.admit($0.descriptor)) }
        guard let info = matches.first, matches.count == 1 else {
            note(matches.isEmpty
                ? "error: no device matches \(target)"
                : "error: \(matches.count) devices match \(target), on ports \(matches.map(\.descriptor.port).joined(separator: ", ")); name one by its port")
            throw ExitCode(1)
        }
        let description = DeviceDescription(info, allConfigurations: Self.configurations(root: root, port: info.descriptor.port), table: table)
        let out = OutputStream(fd: 1, lineBuffered: false)
        defer { out.flush() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            out.writeLine(String(decoding: try encoder.encode(description), as: UTF8.self))
        } else {
            for line in description.lines { out.writeLine(line) }
        }
    }

    /// Every configuration in the device's sysfs `descriptors`, or none when it cannot be
    /// read or parsed (the active one, from the scan, is shown regardless).
    static func configurations(root: String, port: String) -> [USBConfiguration] {
        guard let blob = FileManager.default.contents(atPath: root + "/" + port + "/descriptors") else { return [] }
        return (try? USBDescriptorParser.parse(sysfsDescriptors: Array(blob)))?.configurations ?? []
    }
}
