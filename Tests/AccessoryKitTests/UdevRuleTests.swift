import Foundation
import Testing
import AccessoryCore
@testable import AccessoryKit

@Suite("udev rules")
struct UdevRuleTests {
    @Test("Generated rules parse as udev rules and match only the named IDs", arguments: [
        (UInt16(0x1209), UInt16?(0x0001), String?(nil)),
        (0x1209, nil, "plugdev"),
        (0x0403, 0x6001, "dialout"),
    ])
    func generatedRulesParse(vendor: UInt16, product: UInt16?, group: String?) throws {
        let rule = try UdevRule(vendor: vendor, product: product, group: group)
        let rules = try UdevRulesParser().parse(rule.text)
        #expect(rules.count == 1)
        let r = try #require(rules.first)
        #expect(r.grantsAccess)
        #expect(!r.pairs.contains { $0.key == "MODE" && $0.value == "0666" })
        #expect(r.pairs.contains { $0.key == "TAG" && $0.op == "+=" && $0.value == "uaccess" })
        #expect(r.matches(vendor: Hex.four(vendor), product: Hex.four(product ?? 0x4242)))
        #expect(!r.matches(vendor: "dead", product: Hex.four(product ?? 0)))
        if let product {
            #expect(!r.matches(vendor: Hex.four(vendor), product: Hex.four(product &+ 1)))
        }
        #expect(r.pairs.contains { $0.key == "GROUP" } == (group != nil))
    }

    @Test("The shipped template parses and never uses MODE 0666")
    func template() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../udev/70-accessorykit.rules")
        let text = try String(contentsOf: url, encoding: .utf8)
        let rules = try UdevRulesParser().parse(text)
        try #require(rules.count == 2)
        #expect(rules.allSatisfy { r in !r.pairs.contains { $0.key == "MODE" && $0.value == "0666" } })
        #expect(rules[0].matches(vendor: "1209", product: "0001"))
        for product in ["2d00", "2d01", "2d04", "2d05"] { #expect(rules[1].matches(vendor: "18d1", product: product)) }
        #expect(!rules[1].matches(vendor: "18d1", product: "4ee7"))
    }

    @Test("The Android accessory-mode rule covers 18d1:2d00–2d05 and nothing else")
    func androidAccessory() throws {
        let rule = try UdevRule.androidAccessory(group: "plugdev")
        let parsed = try #require(try UdevRulesParser().parse(rule.text).first)
        for p in 0x2d00...0x2d05 { #expect(parsed.matches(vendor: "18d1", product: Hex.four(UInt16(p)))) }
        for p in ["2d06", "2d10", "4ee7", "2c05"] { #expect(!parsed.matches(vendor: "18d1", product: p)) }
        #expect(!parsed.matches(vendor: "04e8", product: "2d01"))
        #expect(parsed.pairs.contains { $0.key == "GROUP" && $0.value == "plugdev" })
        #expect(rule.installHint.contains("--android-accessory"))
    }

    @Test("The parser rejects broken rules with a line number", arguments: [
        ("SUBSYSTEM==\"usb\", ATTR{idVendor}==\"1209", 1, "unterminated"),
        ("\n\nSUBSYSTEM==usb", 3, "double quotes"),
        ("SUBSYSTEM==\"usb\" TAG+=\"uaccess\"", 1, "expected ','"),
        ("FROB==\"x\"", 1, "unknown key"),
        ("ATTR==\"x\"", 1, "needs an {attribute}"),
        ("SUBSYSTEM==\"usb\", MODE=\"rw\"", 1, "octal"),
        ("SUBSYSTEM==\"usb\", \\", 1, "continued line"),
    ])
    func rejects(text: String, line: Int, reason: String) {
        #expect {
            _ = try UdevRulesParser().parse(text)
        } throws: { error in
            guard let e = error as? UdevRulesParser.SyntaxError else { return false }
            return e.line == line && e.reason.contains(reason)
        }
    }

    @Test("Continued lines, comments and globs")
    func continuation() throws {
        let text = "# c\nSUBSYSTEM==\"usb\", \\\n  ATTR{idVendor}==\"12[0-9]9|abcd\", ATTR{idProduct}!=\"00*\", GROUP=\"plugdev\"\n"
        let rules = try UdevRulesParser().parse(text)
        try #require(rules.map(\.line) == [2])
        #expect(rules[0].matches(vendor: "1209", product: "1000"))
        #expect(rules[0].matches(vendor: "abcd", product: "1000"))
        #expect(!rules[0].matches(vendor: "1209", product: "0001"))
        #expect(!rules[0].matches(vendor: "12a9", product: "1000"))
    }

    @Test("Group names are checked")
    func groupNames() {
        #expect(throws: AccessoryError.self) { try UdevRule(vendor: 1, group: "bad group") }
        #expect(throws: AccessoryError.self) { try UdevRule(vendor: 1, group: "0abc") }
    }
}
