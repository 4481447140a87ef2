/// The protocols an application declares, and how to tell which accessories speak them.
///
/// An accessory speaks the protocols named by the string descriptors of its vendor-specific
/// (class 0xff) interfaces, plus every protocol whose rule matches it: the table's
/// ``rules``, then the built-in ones (``builtInRules``).
public struct ProtocolTable: Sendable, Hashable {
    /// The application's own rules, matched before the built-in ones.
    public var rules: [ProtocolRule]

    /// The rules every table has after its own: Android Open Accessory's
    /// (``ProtocolRule/androidAccessory``).
    public static let builtInRules: [ProtocolRule] = [.androidAccessory]

    private var allRules: [ProtocolRule] { rules + Self.builtInRules }

    /// Whether a device known only by its descriptor (no configuration) matches none of the
    /// built-in rules: they all match on interfaces. A table without rules of its own then
    /// adds no protocol to such a device.
    package static let builtInRulesNeedInterfaces = builtInRules.allSatisfy {
        if case .device = $0.match { false } else { true }
    }

    /// A table with `rules` (none by default: interface strings and built-in rules only).
    public init(rules: [ProtocolRule] = []) {
        self.rules = rules
    }

    /// The protocols a device speaks, without duplicates: interface strings first, then
    /// rules in table order. `nil` when neither the interfaces nor any rule can tell.
    package func protocols(for info: USBDeviceInfo) -> [String]? {
        var names: [String] = []
        func add(_ name: String) { if !names.contains(name) { names.append(name) } }
        let interfaces = info.configuration?.interfaces ?? []
        for interface in interfaces where interface.isVendorSpecific {
            if let name = interface.name, !name.isEmpty { add(name) }
        }
        // Both lists in turn, not `allRules`: this runs for every arrival, and a joined copy
        // would be an allocation each time.
        for rule in rules where matches(rule, info) { add(rule.protocolName) }
        for rule in Self.builtInRules where matches(rule, info) { add(rule.protocolName) }
        return names.isEmpty && info.configuration == nil ? nil : names
    }

    /// The interface that carries `protocolName` on a device, alternate setting 0 first.
    ///
    /// An interface whose string is the protocol name wins; then an interface an interface
    /// rule matches; then, for a device rule, the first vendor-specific interface with bulk
    /// endpoints, or else the first interface with bulk endpoints in both directions.
    package func interface(for
 protocolName: String, in info: USBDeviceInfo) -> USBInterface? {
        let interfaces = (info.configuration?.interfaces ?? []).sorted { $0.alternate < $1.alternate }
        if let named = interfaces.first(where: { $0.name == protocolName }) { return named }
        let mine = allRules.filter { $0.protocolName == protocolName }
        for rule in mine {
            switch rule.match {
            case .interface:
                if let i = interfaces.first(where: { Self.matches(rule.match, $0) }) { return i }
            case .productInterface(_, _, let number):
                if matches(rule, info), let i = interfaces.first(where: { $0.number == number }) { return i }
            case .device:
                break
            }
        }
        guard mine.contains(where: { if case .device = $0.match { matches($0, info) } else { false } }) else { return nil }
        let bulk = { (i: USBInterface) in i.endpoints.contains { $0.transferType == .bulk } }
        let bulkBothWays = { (i: USBInterface) in
            i.endpoints.contains { $0.transferType == .bulk && $0.direction == .in }
                && i.endpoints.contains { $0.transferType == .bulk && $0.direction == .out }
        }
        return interfaces.first { $0.isVendorSpecific && bulk($0) } ?? interfaces.first(where: bulkBothWays)
    }

    private func matches(_ rule: ProtocolRule, _ info: USBDeviceInfo) -> Bool {
        switch rule.match {
        case .device(let vendor, let product):
            return info.descriptor.vendor == vendor && (product == nil || info.descriptor.product == product)
        case .interface:
            return info.configuration?.interfaces.contains { Self.matches(rule.match, $0) } ?? false
        case .productInterface(let vendor, let products, let number):
            guard info.descriptor.vendor == vendor, let product = info.descriptor.product, products.contains(product) else { return false }
            return info.configuration?.interfaces.contains { $0.number == number } ?? false
        }
    }

    private static func matches(_ match: ProtocolRule.Match, _ interface: USBInterface) -> Bool {
        guard case .interface(let c, let s, let p) = match else { return false }
        return interface.interfaceClass == c && (s == nil || interface.interfaceSubclass == s)
            && (p == nil || interface.interfaceProtocol == p)
    }
}
