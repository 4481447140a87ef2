import Foundation
import Testing

/// The README's command table against the tool itself: every subcommand and option the
/// README names exists, as `accessoryctl … --help` shows it.
@Suite("The README's accessoryctl table matches --help")
struct ReadmeCLITests {
    /// Each row of the README's `## accessoryctl` table whose first cell is a command: the
    /// subcommand words and the options named in the row.
    static func rows() throws -> [(command: [String], options: [String])] {
        let readme = CLI.packageRoot.appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let start = text.range(of: "\n## accessoryctl\n") else { return [] }
        let section = text[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var rows: [(command: [String], options: [String])] = []
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| `") {
            // The first cell's code spans: `open TARGET (--protocol P | --interface N) …`.
            let cell = line.dropFirst(2).components(separatedBy: " | ").first ?? ""
            for span in cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter({ $0.offset % 2 == 1 }).map({ String($0.element) }) {
                let words = span.split(separator: " ").map(String.init)
                let command = words.prefix { $0.first?.isLowercase == true && !$0.hasPrefix("-") }
                guard !command.isEmpty else { continue }
                let options = span.split(whereSeparator: { " ()[]|\\=".contains($0) })
                    .filter { $0.hasPrefix("--") && $0.count > 2 }.map(String.init)
                rows.append((Array(command), options))
            }
        }
        return rows
    }

    @Test("Every subcommand and option in the README's table is in accessoryctl's --help")
    func tableMatchesHelp() throws {
        let rows = try Self.rows()
        // The table lists every subcommand.
        #expect(Set(rows.map { $0.command.first ?? "" }).isSuperset(of: [
            "list", "watch", "record", "replay", "import", "open", "describe", "doctor", "control", "aoa", "udev-rule", "capture",
        ]), "\(rows.map(\.command))")
        for row in rows {
            let help = try CLI.run(CLI.accessoryctl, row.command + ["--help"])
            #expect(help.status == 0, "accessoryctl \(row.command.joined(separator: " ")) --help: \(help.stderr)")
            for option in row.options {
                #expect(help.stdout.contains(option), "accessoryctl \(row.command.joined(separator: " ")) --help lacks \(option)")
            }
        }
    }
}
