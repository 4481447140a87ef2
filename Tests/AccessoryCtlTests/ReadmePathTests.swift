import Foundation
import Testing

/// The README's notice path and byte path (and ARCHITECTURE.md's) against the code: every hop
/// they name as `Name` or `Name.member` is declared in Sources/.
@Suite("The README's notice and byte paths name hops that exist in Sources/")
struct ReadmePathTests {
    /// What Sources/ declares, read once.
    static let declarations = Declarations(root: CLI.packageRoot.appendingPathComponent("Sources"))

    /// The paragraph of `file` (at the package's root) that starts with `lead`, to the next
    /// blank line.
    static func paragraph(_ lead: String, in file: String) throws -> Substring {
        let text = try String(contentsOf: CLI.packageRoot.appendingPathComponent(file), encoding: .utf8)
        guard let start = text.range(of: "\n" + lead) else { return "" }
        let rest = text[start.upperBound...]
        return text[start.lowerBound..<(rest.range(of: "\n\n")?.lowerBound ?? rest.endIndex)]
    }

    /// The paragraph's code spans that are a name or a name and a member: `TransferQueue`,
    /// `AccessoryManager.handle`, `libusb_submit_transfer`. Others (`events()`) are prose.
    static func hops(in paragraph: Substring) -> [String] {
        paragraph.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            .filter { span in
                let parts = span.split(separator: ".", omittingEmptySubsequences: false)
                return (1...2).contains(parts.count) && parts.allSatisfy(Declarations.isIdentifier)
            }
    }

    /// The paths checked: the file, the paragraph's lead, and how many hops it names at least
    /// (so that a renamed paragraph or a lost list fails rather than checking nothing).
    static let paths: [(file: String, lead: String, atLeast: Int)] = [
        ("README.md", "**A hotplug notice**", 15),
        ("README.md", "**A byte**", 15),
        ("ARCHITECTURE.md", "**The path of a hotplug notice**", 15),
        ("ARCHITECTURE.md", "**The path of a byte**", 15),
    ]

    @Test("Every Name and Name.member in the notice and byte paths is declared in Sources/", arguments: paths.indices)
    func pathNamesExist(_ index: Int) throws {
        let path = Self.paths[index]
        let hops = Self.hops(in: try Self.paragraph(path.lead, in: path.file))
        #expect(hops.count >= path.atLeast, "\(path.file), \(path.lead): \(hops.count) names, \(hops)")
        let missing = hops.filter { !Self.declarations.declares($0) }
        #expect(missing.isEmpty, "\(path.file), \(path.lead) names what Sources/ does not declare: \(missing)")
    }

    @Test("The check finds a made-up hop")
    func madeUpHopsAreFound() {
        let d = Self.declarations
        #expect(d.declares("AccessoryManager.handle") && d.declares("HotplugNoticeQueue") && d.declares("libusb_submit_transfer"))
        for madeUp in ["AccessoryManager.teleport", "HotplugWormhole", "ConnectionRegistry.handle", "libusb_teleport", "AccessoryManager.apply"] {
            #expect(!d.declares(madeUp), "\(madeUp) counts as declared")
        }
    }
}

/// The names Swift files declare, from their tokens (comments left out): a keyword
/// (`class`, `struct`, `enum`, `actor`, `protocol`, `typealias`, `func`, `var`, `let`, `case`)
/// and the name right after it.
struct Declarations {
    static let keywords: Set<String> = ["class", "struct", "enum", "actor", "protocol", "typealias", "func", "var", "let", "case"]
    static let typeKeywords: Set<String> = ["class", "struct", "enum", "actor", "protocol", "extension"]

    /// Every name declared anywhere.
    private(set) var names: Set<String> = []
    /// For each type, what the files that declare or extend it declare.
    private(set) var members: [String: Set<String>] = [:]
    /// The C functions called: identifiers that start with `libusb_` followed by `(`.
    private(set) var calls: Set<String> = []

    static func isIdentifier(_ s: Substring) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || first.properties.isAlphabetic else { return false }
        return s.unicodeScalars.allSatisfy { $0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0) }
    }

    init(root: URL) {
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        for file in files {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            add(text)
        }
    }

    /// Whether `hop` is declared: a type or other name declared anywhere, a member declared
    /// in a file that declares or extends the type, or a `libusb_` function the code calls.
    func declares(_ hop: String) -> Bool {
        let parts = hop.split(separator: ".").map(String.init)
        if parts.count == 2 { return names.contains(parts[0]) && members[parts[0], default: []].contains(parts[1]) }
        if hop.hasPrefix("libusb_") { return calls.contains(hop) }
        return names.contains(hop)
    }

    private mutating func add(_ text: String) {
        // The identifiers of each line, line comments left out: each with whether only spaces
        // come between it and the one before, and whether `(` follows it.
        var tokens: [(name: String, afterSpace: Bool, call: Bool)] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let code = line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
            var i = code.startIndex
            var afterSpace = false  // the first on a line follows no identifier
            while i < code.endIndex {
                guard code[i] == "_" || code[i].isLetter else {
                    if !code[i].isWhitespace { afterSpace = false }
                    i = code.index(after: i)
                    continue
                }
                var j = i
                while j < code.endIndex, code[j] == "_" || code[j].isLetter || code[j].isNumber { j = code.index(after: j) }
                tokens.append((String(code[i..<j]), afterSpace, j < code.endIndex && code[j] == "("))
                afterSpace = true
                i = j
            }
            tokens.append(("", false, false))  // a line's end: nothing is declared across it
        }
        var declared: Set<String> = []
        var types: Set<String> = []
        for (k, token) in tokens.enumerated() {
            if token.name.hasPrefix("libusb_"), token.call { calls.insert(token.name) }
            guard k + 1 < tokens.count, tokens[k + 1].afterSpace else { continue }
            let next = tokens[k + 1].name
            if Self.keywords.contains(token.name) { declared.insert(next) }
            if Self.typeKeywords.contains(token.name) { types.insert(next) }
        }
        names.formUnion(declared)
        for type in types { members[type, default: []].formUnion(declared) }
    }
}
