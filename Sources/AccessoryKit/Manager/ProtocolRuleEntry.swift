import AccessoryCore

/// One entry of a protocol rules file, as decoded, before it is checked.
enum ProtocolRuleEntry: Decodable {
    case object([String: Field])
    case notObject

    /// A member's value: only strings and numbers mean anything in a rule.
    enum Field: Decodable {
        case string(String)
        case number(Double)
        case other

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let text = try? value.decode(String.self) {
                self = .string(text)
            } else if let number = try? value.decode(Double.self) {
                self = .number(number)
            } else {
                self = .other
            }
        }
    }

    /// Why an entry is not a rule.
    struct Problem: Error {
        var reason: String
    }

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer()
        if let members = try? value.decode([String: Field].self) { self = .object(members) } else { self = .notObject }
    }

    static let keys: Set<String> = ["vendor", "product", "interface", "protocol"]

    /// The rule the entry declares.
    func rule() throws(Problem) -> ProtocolRule {
        guard case .object(let members) = self else { throw Problem(reason: "not an object with \"vendor\" and \"protocol\"") }
        if let unknown = members.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw Problem(reason: "unknown key \"\(unknown)\" (a rule has vendor, product, interface and protocol)")
        }
        guard let vendorText = members["vendor"] else { throw Problem(reason: "no \"vendor\" (hexadecimal, such as \"06cb\")") }
        let vendor = try Self.id(vendorText, "vendor")
        let product = try members["product"].map { (field) throws(Problem) in try Self.id(field, "product") }
        guard case .string(let name)? = members["protocol"], !name.isEmpty else {
            throw Problem(reason: "\"protocol\" must be a non-empty string, such as \"com.example.reader\"")
        }
        guard let interfaceField = members["interface"] else {
            return .device(vendor: vendor, product: product, speaks: name)
        }
        guard case .number(let number) = interfaceField, number >= 0, number <= 255, number.rounded() == number else {
            throw Problem(reason: "\"interface\" must be an interface number, 0 to 255")
        }
        let products = product.map { $0...$0 } ?? 0...UInt16.max
        return ProtocolRule(name, match: .productInterface(vendor: vendor, products: products, interface: UInt8(number)))
    }

    /// A vendor or product ID: one to four hexadecimal digits, as a string.
    private static func id(_ field: Field, _ key: String) throws(Problem) -> UInt16 {
        guard case .string(let text) = field, (1...4).contains(text.count), let value = UInt16(text, radix: 16) else {
            throw Problem(reason: "\"\(key)\" must be 1 to 4 hexadecimal digits in a string, such as \"06cb\"")
        }
        return value
    }
}
