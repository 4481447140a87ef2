/// Parses udev rules files well enough to check their syntax and to tell which rules match a
/// USB device. It follows udev(7): comma-separated `KEY[{attr}] OP "value"` pairs, `#`
/// comments, and lines continued with a trailing backslash.
package struct UdevRulesParser: Sendable {
    /// One `KEY{attr} OP "value"` pair.
    package struct Assignment: Hashable, Sendable {
        package var key: String
        package var attribute: String?
        package var op: String
        package var value: String
    }

    /// One rule: the pairs of one logical line.
    package struct Rule: Hashable, Sendable {
        package var line: Int
        package var pairs: [Assignment]

        /// Whether the rule certainly matches a USB device with these IDs: it must name the
        /// vendor, and every `==` / `!=` condition must be one this parser can evaluate
        /// (SUBSYSTEM, ATTR{idVendor}, ATTR{idProduct}, ENV{DEVTYPE}, ACTION) and hold.
        package func matches(vendor: String, product: String) -> Bool {
            guard pairs.contains(where: { ($0.key == "ATTR" || $0.key == "ATTRS") && $0.attribute == "idVendor" }) else { return false }
            for p in pairs where p.op == "==" || p.op == "!=" {
                let actual: String?
                switch (p.key, p.attribute) {
                case ("SUBSYSTEM", nil), ("SUBSYSTEMS", nil): actual = "usb"
                case ("ATTR", "idVendor"), ("ATTRS", "idVendor"): actual = vendor
                case ("ATTR", "idProduct"), ("ATTRS", "idProduct"): actual = product
                case ("ENV", "DEVTYPE"): actual = "usb_device"
                case ("ACTION", nil): actual = "add"
                default: actual = nil
                }
                guard let actual else { return false }
                let hit = p.value.split(separator: "|").contains { UdevRulesParser.glob(String($0), actual) }
                if hit != (p.op == "==") { return false }
            }
            return true
        }

        /// Whether the rule grants access (uaccess tag, a group or a mode).
        package var grantsAccess: Bool {
            pairs.contains { ($0.key == "TAG" && $0.value == "uaccess") || $0.key == "GROUP" || $0.key == "MODE" }
        }
    }

    /// A syntax error, with its line.
    package struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        package var line: Int
        package var reason: String
        package var description: String { "line \(line): \(reason)" }
    }

    static let knownKeys: Set<String> = [
        "ACTION", "DEVPATH", "KERNEL", "KERNELS", "NAME", "SYMLINK", "SUBSYSTEM", "SUBSYSTEMS",
        "DRIVER", "DRIVERS", "ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TAG", "TAGS", "TEST",
        "PROGRAM", "RESULT", "OWNER", "GROUP", "MODE", "SECLABEL", "OPTIONS", "IMPORT", "RUN",
        "LABEL", "GOTO", "WAIT_FOR",
    ]
    static let keysWithAttribute: Set<String> = ["ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TEST", "IMPORT", "RUN", "SECLABEL"]

    package init() {}

    /// Parses a whole rules file.
    package func parse(_ text: String) throws(SyntaxError) -> [Rule] {
        var rules: [Rule] = []
        var pending = ""
        var pendingStart = 0
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = i + 1
            var line = Substring(raw)
            if pending.isEmpty { pendingStart = number }
            if line.hasSuffix("\\") {
                line.removeLast()
                pending += line
                continue
            }
            let logical = pending + line
            pending = ""
            let trimmed = logical.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            rules.append(Rule(line: pendingStart, pairs: try parseRule(trimmed, line: pendingStart)))
        }
        if !pending.isEmpty { throw SyntaxError(line: pendingStart, reason: "the file ends inside a continued line") }
        return rules
    }

    private func parseRule(_ text: Substring, line: Int) throws(SyntaxError) -> [Assignment] {
        var pairs: [Assignment] = []
        var s = text[...]
        while true {
            s = s.drop { $0 == " " || $0 == "\t" }
            let key = String(s.prefix { $0.isLetter || $0 == "_" })
            guard !key.isEmpty else { throw SyntaxError(line: line, reason: "expected a key at '\(s.prefix(20))'") }
            guard Self.knownKeys.contains(key) else { throw SyntaxError(line: line, reason: "unknown key '\(key)'") }
            s = s.dropFirst(key.count)
            var attribute: String?
            if s.first == "{" {
                guard let close = s.firstIndex(of: "}") else { throw SyntaxError(line: line, reason: "unclosed '{' after \(key)") }
                attribute = String(s[s.index(after: s.startIndex)..<close])
                s = s[s.index(after: close)...]
            }
            if Self.keysWithAttribute.contains(key), key != "IMPORT", key != "RUN", attribute == nil {
                throw SyntaxError(line: line, reason: "\(key) needs an {attribute}")
            }
            s = s.drop { $0 == " " || $0 == "\t" }
            let op = ["==", "!=", "+=", "-=", ":=", "="].first { s.hasPrefix($0) }
            guard let op else { throw SyntaxError(line: line, reason: "expected an operator after \(key)") }
            s = s.dropFirst(op.count).drop { $0 == " " || $0 == "\t" }
            guard s.first == "\"" else { throw SyntaxError(line: line, reason: "the value of \(key) must be in double quotes") }
            s = s.dropFirst()
            var value = ""
            var closed = false
            while let c = s.first {
                s = s.dropFirst()
                if c == "\\", let next = s.first { value.append(next); s = s.dropFirst(); continue }
                if c == "\"" { closed = true; break }
                value.append(c)
            }
            guard closed else { throw SyntaxError(line: line, reason: "unterminated value of \(key)") }
            if key == "MODE", op != "==", op != "!=", value.contains(where: { !("0"..."7").contains($0) }) {
                throw SyntaxError(line: line, reason: "MODE must be octal, got '\(value)'")
            }
            pairs.append(Assignment(key: key, attribute: attribute, op: op, value: value))
            s = s.drop { $0 == " " || $0 == "\t" }
            if s.isEmpty { return pairs }
            guard s.first == "," else { throw SyntaxError(line: line, reason: "expected ',' between pairs at '\(s.prefix(20))'") }
            s = s.dropFirst()
        }
    }

    /// udev's shell-style glob: `*`, `?` and `[...]` character classes.
    static func glob(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern), t = Array(text)
        func match(_ i: Int, _ j: Int) -> Bool {
            if i == p.count { return j == t.count }
            switch p[i] {
            case "*": return (j...t.count).contains { match(i + 1, $0) }
            case "?": return j < t.count && match(i + 1, j + 1)
            case "[":
                guard let close = p[(i + 1)...].firstIndex(of: "]"), j < t.count else { return false }
                let set = p[(i + 1)..<close]
                var hit = false
                var k = set.startIndex
                while k < set.endIndex {
                    if k + 2 < set.endIndex, set[k + 1] == "-" {
                        if set[k] <= t[j] && t[j] <= set[k + 2] { hit = true }
                        k += 3
                    } else {
                        if set[k] == t[j] { hit = true }
                        k += 1
                    }
                }
                return hit && match(close + 1, j + 1)
            default: return j < t.count && p[i] == t[j] && match(i + 1, j + 1)
            }
        }
        return match(0, 0)
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> SubSequence {
        let start = firstIndex { $0 != " " && $0 != "\t" && $0 != "\r" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" && $0 != "\r" }.map { index(after: $0) } ?? start
        return self[start..<Swift.max(start, end)]
    }
}
