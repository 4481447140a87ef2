import AccessoryCore

/// A narrow udev rule that lets a user open one vendor's (or one product's) USB devices.
///
/// It grants access to the logged-in seat user (`TAG+="uaccess"`) and, if named, to a group
/// with mode 0660. It never makes a node world-writable.
public struct UdevRule: Hashable, Sendable {
    /// The vendor ID the rule matches.
    public var vendor: UInt16
    /// The product ID the rule matches; `nil`: every product of the vendor.
    public var product: UInt16?
    /// A group also granted access (mode 0660), if any.
    public var group: String?
    /// A udev glob for the product ID instead of ``product``, such as `2d0[0-5]`.
    package private(set) var productPattern: String?

    /// The file name the README and error messages tell users to install the rule as.
    package static let fileName = "70-accessorykit.rules"

    /// A rule for `vendor` (and `product`); throws when `group` is not a valid group name.
    public init(vendor: UInt16, product: UInt16? = nil, group: String? = nil) throws(AccessoryError) {
        if let group, !Self.isValidGroupName(group) {
            throw AccessoryError(.io, "'\(group)' is not a valid group name (letters, digits, '_' and '-', starting with a letter or '_')")
        }
        self.vendor = vendor
        self.product = product
        self.group = group
    }

    /// Every Android phone in accessory mode (Android Open Accessory): 18d1:2d00–2d05, the
    /// IDs a phone takes after a switch, whatever its maker. Without it the host can switch a
    /// phone but not open what it becomes (android-udev-rules #213).
    public static func androidAccessory(group: String? = nil) throws(AccessoryError) -> UdevRule {
        var rule = try UdevRule(vendor: 0x18d1, group: group)
        rule.productPattern = "2d0[0-5]"
        return rule
    }

    /// The rule text: a comment line and one rule line, ending in a newline.
    public var text: String {
        let ids = Hex.four(vendor) + (product.map { ":" + Hex.four($0) } ?? productPattern.map { _ in ":2d00–2d05 (Android accessory mode)" } ?? "")
        var match = #"SUBSYSTEM=="usb", ENV{DEVTYPE}=="usb_device", ATTR{idVendor}==""# + Hex.four(vendor) + "\""
        if let product { match += #", ATTR{idProduct}==""# + Hex.four(product) + "\"" }
        if product == nil, let productPattern { match += #", ATTR{idProduct}==""# + productPattern + "\"" }
        var grant = #"TAG+="uaccess""#
        if let group { grant += #", GROUP=""# + group + #"", MODE="0660""# }
        return "# AccessoryKit: let the seat user\(group.map { " and group \($0)" } ?? "") open USB devices \(ids)\n\(match), \(grant)\n"
    }

    /// The shell commands that install the rule.
    package var installHint: String {
        var args = productPattern == nil ? "--vendor \(Hex.four(vendor))" : "--android-accessory"
        if let product { args += " --product \(Hex.four(product))" }
        if let group { args += " --group \(group)" }
        return "accessoryctl udev-rule \(args) | sudo tee /etc/udev/rules.d/\(Self.fileName) && sudo udevadm control --reload && sudo udevadm trigger"
    }

    static func isValidGroupName(_ s: String) -> Bool {
        guard let first = s.utf8.first, s.utf8.count <= 32 else { return false }
        let isStart = (first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z")) || first == UInt8(ascii: "_")
        return isStart && s.utf8.allSatisfy { c in
            (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
                || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }
}
