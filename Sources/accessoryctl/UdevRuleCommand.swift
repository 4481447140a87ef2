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

            Android phones: the host needs the phone's own IDs to switch it (accessoryctl aoa), \
            and --android-accessory (18d1:2d00–2d05) to open what it becomes:
              accessoryctl udev-rule --vendor 18d1 --product 4ee7
              accessoryctl udev-rule --android-accessory
            """)

    @Option(help: "Vendor ID, 4 hex digits (such as 1209).")
    var vendor: String?

    @Flag(help: "The rule for Android phones in accessory mode: 18d1:2d00–2d05.")
    var androidAccessory = false

    @Option(help: "Product ID, 4 hex digits. Without it, the rule covers every product of the vendor.")
    var product: String?

    @Option(help: "Also grant access to this group (mode 0660).")
    var group: String?

    func validate() throws {
        guard androidAccessory != (vendor != nil) else {
            throw ValidationError("give --vendor VVVV [--product PPPP], or --android-accessory")
        }
        if androidAccessory, product != nil { throw ValidationError("--product goes with --vendor, not --android-accessory") }
    }

    func run() throws {
        if androidAccessory {
            do {
                print(try UdevRule.androidAccessory(group: group).text, terminator: "")
                return
            } catch {
                throw ValidationError(error.message)
            }
        }
        let vendor = self.vendor ?? ""
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
