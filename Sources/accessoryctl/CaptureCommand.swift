import AccessoryCapture
import ArgumentParser

struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Read Linux usbmon captures (pcap or pcapng, as Wireshark, tcpdump or AccessoryKit write them).",
        subcommands: [Summary.self, Trim.self])

    struct Summary: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "summary",
            abstract: "Print, per device and endpoint, the transfers completed with status 0 and the bytes they moved.",
            discussion: """
                Bytes are the sum of the completions' actual lengths (usbmon's length field). Vendor \
                and product come from a recorded GET_DESCRIPTOR(DEVICE) answer, and are left out when \
                the capture has none. The file is read in 1 MiB chunks, so memory stays flat whatever \
                its size. A malformed file is an error naming the file, the byte offset and the reason \
                (exit 1); a last packet cut short is only a warning. An endpoint some of whose \
                transfers had their data cut by the capture (a snap length, as tshark -s sets) shows \
                how many under CUT. A hostile file costs bounded memory: past 4096 interfaces per \
                section, 4096 devices or 65536 endpoints, the rest is skipped with a warning.

                Examples:
                  accessoryctl capture summary reader.pcapng
                  accessoryctl capture summary reader.pcapng --json | jq '.devices[].endpoints'
                """)

        @Argument(help: "The capture file (pcapng or pcap, link type 220 or 189).")
        var file: String

        @Flag(help: #"Print one JSON object: {"devices":[{"bus","address","vendor","product","endpoints":[{"endpoint","kind","completed","bytes"}]}]}."#)
        var json = false

        func run() throws {
            OutputStream.ignoreSigpipe()
            let summary: USBCaptureSummary
            do {
                summary = try USBCaptureSummary(path: file)
            } catch {
                note("error: \(error)")
                throw ExitCode(1)
            }
            if let cut = summary.truncation { note("warning: \(cut); dropped") }
            for sentence in summary.drops.sentences { note("warning: \(file): \(sentence), to bound the memory used") }
            let out = OutputStream(fd: 1, lineBuffered: false)
            defer { out.flush() }
            if json {
                out.writeLine(Self.json(summary))
                return
            }
            let style = TerminalStyle(fd: 1)
            if summary.devices.isEmpty {
                note("no usbmon packets in \(file)")
                return
            }
            for (n, entry) in summary.devices.enumerated() {
                let d = entry.device
                let id = d.vendor.map { "  \(Self.hex($0, 4)):\(Self.hex(d.product ?? 0, 4))" } ?? ""
                if n > 0 { out.writeLine("") }
                out.writeLine(style.bold("bus \(d.bus) address \(d.address)\(id)"))
                // CUT only where the capture cut some transfer's data: it cannot be replayed whole.
                let marksCut = entry.endpoints.contains { $0.cut > 0 }
                let header = ["ENDPOINT", "KIND", "COMPLETED", "BYTES"] + (marksCut ? ["CUT"] : [])
                let rows = entry.endpoints.map {
                    ["0x" + Self.hex(UInt16($0.address), 2), $0.kind.name, String($0.completed), String($0.bytes)]
                        + (marksCut ? [$0.cut > 0 ? String($0.cut) : ""] : [])
                }
                let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max()! }
                func format(_ row: [String]) -> String {
                    "  " + row.enumerated().map { i, s in
                        i < 2 ? EventText.pad(s, widths[i]) : String(repeating: " ", count: widths[i] - s.count) + s
                    }.joined(separator: "  ").trimmingSuffix(" ")
                }
                out.writeLine(style.dim(format(header)))
                for row in rows { out.writeLine(format(row)) }
            }
            let cut = summary.devices.reduce(0) { $0 + $1.endpoints.reduce(0) { $0 + $1.cut } }
            if cut > 0 {
                note("warning: \(file): the capture cut the data of \(cut) transfer\(cut == 1 ? "" : "s") (fewer bytes captured than carried, as a snap length does; counted under CUT): they cannot be replayed exactly")
            }
        }

        /// The contract's one JSON object (CAPTURE-API.md §5).
        static func json(_ summary: USBCaptureSummary) -> String {
            let devices = summary.devices.map { entry in
                let d = entry.device
                var fields = [#""bus":\#(d.bus)"#, #""address":\#(d.address)"#]
                if let vendor = d.vendor { fields.append(#""vendor":"\#(hex(vendor, 4))""#) }
                if let product = d.product { fields.append(#""product":"\#(hex(product, 4))""#) }
                let endpoints = entry.endpoints.map { e in
                    #"{"endpoint":"0x\#(hex(UInt16(e.address), 2))","kind":"\#(e.kind.name)","completed":\#(e.completed),"bytes":\#(e.bytes)}"#
                }
                fields.append(#""endpoints":[\#(endpoints.joined(separator: ","))]"#)
                return "{" + fields.joined(separator: ",") + "}"
            }
            return #"{"devices":[\#(devices.joined(separator: ","))]}"#
        }

        /// `value` in lowercase hexadecimal, zero-padded to `digits`.
        static func hex(_ value: UInt16, _ digits: Int) -> String {
            let s = String(value, radix: 16)
            return String(repeating: "0", count: max(0, digits - s.count)) + s
        }
    }
}

extension String {
    /// The string without the copies of `character` at its end.
    fileprivate func trimmingSuffix(_ character: Character) -> String {
        var s = self
        while s.last == character { s.removeLast() }
        return s
    }
}
