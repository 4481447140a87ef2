import AccessoryTestSupport
import Foundation
import Testing

/// AccessoryCore is values only: no file, clock, thread or device I/O (Package.swift and
/// DESIGN.md say so; traces and the importer, which read files, are AccessoryTraces).
@Suite("The pure core")
struct CorePurityTests {
    /// What I/O, clocks and threads look like in Swift source, outside comments.
    static let forbidden: [(pattern: String, what: String)] = [
        (#"\bopen\s*\("#, "open("), (#"\bread\s*\("#, "read("), (#"\bwrite\s*\("#, "write("),
        (#"\bFileHandle\b"#, "FileHandle"), (#"\bFileManager\b"#, "FileManager"),
        (#"\b\w*Clock\b"#, "a clock"), (#"\bclock_gettime\b"#, "clock_gettime"), (#"\bDate\s*\("#, "Date()"),
        (#"\bTask\s*\.\s*sleep\b"#, "Task.sleep"), (#"\bThread\b"#, "Thread"), (#"\bDispatch\w*"#, "Dispatch"),
        (#"^\s*(@\w+\s+)*(public\s+|package\s+|internal\s+)?import\s+(Foundation|Glibc|Darwin|Dispatch|System\w*)\b"#, "an OS import"),
    ]

    /// `source` without `//` and `/* */` comments (string literals are kept: none of the
    /// patterns above belongs in one either).
    static func code(_ source: String) -> String {
        var out = ""
        var i = source.startIndex
        var block = 0
        while i < source.endIndex {
            let rest = source[i...]
            if block > 0 {
                if rest.hasPrefix("*/") { block -= 1; i = source.index(i, offsetBy: 2); continue }
                if rest.hasPrefix("/*") { block += 1; i = source.index(i, offsetBy: 2); continue }
                if source[i] == "\n" { out.append("\n") }
                i = source.index(after: i)
            } else if rest.hasPrefix("/*") {
                block = 1
                i = source.index(i, offsetBy: 2)
            } else if rest.hasPrefix("//") {
                i = rest.firstIndex(of: "\n") ?? source.endIndex
            } else {
                out.append(source[i])
                i = source.index(after: i)
            }
        }
        return out
    }

    @Test("AccessoryCore's sources call no file, clock, thread or OS API")
    func noIO() throws {
        let root = SharedFolder.packageRoot.appendingPathComponent("Sources/AccessoryCore")
        let files = try #require(FileManager.default.enumerator(atPath: root.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10, "the core's sources are where this test looks: \(root.path)")
        for file in files {
            let lines = Self.code(try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() {
                for (pattern, what) in Self.forbidden where line.range(of: pattern, options: .regularExpression) != nil {
                    Issue.record("Sources/AccessoryCore/\(file):\(number + 1) uses \(what): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test("The check sees I/O, clocks and threads, and not words in comments")
    func checkWorks() {
        let hits = { (source: String) in
            Self.code(source).split(separator: "\n").contains { line in Self.forbidden.contains { line.range(of: $0.pattern, options: .regularExpression) != nil } }
        }
        for bad in ["let fd = open(path, O_RDONLY)", "_ = read(fd, &b, 1)", "import Foundation", "let t = ContinuousClock.now",
                    "Thread.sleep(forTimeInterval: 1)", "DispatchQueue.main.async {}", "let h = FileHandle.standardOutput", "@preconcurrency import Glibc"] {
            #expect(hits(bad), "\(bad)")
        }
        for good in ["// No clock, no thread, no I/O: open(", "/* read( write( */ let x = 1", "let reopened = 2", "func unread() {}"] {
            #expect(!hits(good), "\(good)")
        }
    }
}
