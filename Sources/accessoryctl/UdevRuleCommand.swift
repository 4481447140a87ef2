import AccessoryCore
import AccessoryKit
import ArgumentParser

struct UdevRuleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "udev-rule",
        abstract: "Print a narrow udev rule that lets you open an accessory without root.",
        discussion: """
            Examples:
              accessoryctl udev-rule --vendor 1209 --product 0001
              accessoryctl udev-rule --vendor 1209 --group plugdev | sudo tee /etc/udev/rules.d/70-accessorykit.rules
              sudo udevadm control --reload && sudo udevadm trigger
            """)

    @Option(help: "Vendor ID, 4 hex digits (such as 1209).")
    var vendor: String

    @Option(help: "Product ID, 4 hex digits. Without it, the rule covers every product of the vendor.")
    var product: String?

    @Option(help: "Also grant access to this group (mode 0660).")
    var group: String?

    func run() throws {
        guard let v = Hex.parseFour(vendor) else { throw ValidationError("--vendor must be 4 hex digits, such as 1209; got '\(vendor)'") }
        var p: UInt16?
        if let product {
            guard let value = Hex.parseFour(product) else { throw ValidationError("--product must be 4 hex digits, such as 0001; got '\(product)'") }
            p = value
        }
        do {
            let rule = try UdevRule(vendor: v, product: p, group: group)
            print(rule.text, terminator: "")
        } catch {
            throw ValidationError(error.message)
        }
    }
}
