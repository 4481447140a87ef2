import AccessoryCore
import AccessoryTraces
import AccessoryKit
import ArgumentParser
import FoundationEssentials

struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the connected USB accessories.",
        discussion: """
            Reads sysfs only: it never opens a device, so it needs no permissions. Connection IDs \
            are minted by this process (1, 2, …): an ID lives as long as one manager.

            Examples:
              accessoryctl list
              accessoryctl list --include-hubs --json | jq '.[] | select(.vendor == "1209")'
            """)

    @Flag(help: "Print one JSON array: the trace format's device fields plus connectionID, manufacturer, name and protocols.")
    var json = false

    @Flag(help: "Include hubs (root hubs too), as the library's includeHubs does.")
    var includeHubs = false

    func run() throws {
        OutputStream.ignoreSigpipe()
        let root = ProcessInfo.processInfo.environment["ACCESSORYKIT_SYSFS_ROOT"] ?? SysfsScanner.defaultRoot
        let result = SysfsScanner(root: root, includeHubs: includeHubs).scan()
        if let n = result.note { note("note: \(n)") }
        if let failure = result.failure {
            note("accessoryctl: error: sysfs could not be read, so no list is given: \(failure)")
            throw ExitCode(1)
        }
        let infos = result.devices.sorted { ($0.descriptor.bus, $0.descriptor.address ?? 0) < ($1.descriptor.bus, $1.descriptor.address ?? 0) }
        var registry = ConnectionRegistry()
        let accessories = infos.map { registry.admit($0.descriptor) }
        let out = OutputStream(fd: 1, lineBuffered: false)
        defer { out.flush() }
        if json {
            out.writeLine(AccessoryListJSON.array(accessories))
            return
        }
        let style = TerminalStyle(fd: 1)
        if accessories.isEmpty {
            note("no USB accessories found")
            return
        }
        let rows = accessories.map { a -> [String] in
            let d = a.descriptor
            return [String(a.connectionID.rawValue), "\(d.bus):\(d.address.map(String.init) ?? "?")", d.port, d.vendorProduct,
                    d.manufacturer ?? "-", d.name ?? "-", d.serial ?? "-", (d.protocols ?? []).joined(separator: ",")]
        }
        let header = ["ID", "BUS:ADDR", "PORT", "VID:PID", "MANUFACTURER", "NAME", "SERIAL", "PROTOCOLS"]
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max()! }
        func format(_ row: [String]) -> String {
            row.enumerated().map { i, s in i == row.count - 1 ? s : EventText.pad(s, widths[i]) }.joined(separator: "  ")
        }
        out.writeLine(style.bold(format(header)))
        for row in rows { out.writeLine(format(row)) }
    }
}
