import AccessoryCore
/// A JSON value, as parsed from one line by ``JSONLine``.
package enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits in `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// An object's members in the order written; a repeated key appears more than once.
    case object([Member])

    /// One `"key": value` pair of an object.
    package struct Member: Hashable, Sendable {
        package var key: String
        package var value: JSONValue

        package init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// For an object, the value of the last member named `key`.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The number as a `Double`, for `.int` and `.double`.
    package var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The integer, for `.int`.
    package var intValue: Int? {
        if case .int(let i) = self { return i }
        return nil
    }

    /// The string, for `.string`.
    package var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
