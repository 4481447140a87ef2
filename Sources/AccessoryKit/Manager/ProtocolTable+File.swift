import AccessoryCore
import FoundationEssentials
import Glibc

extension ProtocolTable {
    /// A table with the rules of a JSON file, which `accessoryctl --protocols FILE` reads too.
    ///
    /// The file holds an array of rules. IDs are spelled as `accessoryctl list --json`
    /// spells them, in hexadecimal; `product` and `interface` are optional:
    ///
    ///     [{"vendor": "06cb", "product": "00bd", "interface": 0, "protocol": "com.example.reader"}]
    ///
    /// A rule without `interface` is a ``ProtocolRule/Match/device(vendor:product:)`` rule; one
    /// with it is a ``ProtocolRule/Match/productInterface(vendor:products:interface:)`` rule
    /// (every product of the vendor when `product` is absent).
    ///
    /// - Parameter path: the file's path.
    /// - Throws: ``AccessoryError``: `.io` when the file cannot be read; `.invalidArgument`
    ///   for a file that is not such an array, naming the file, the entry (by index, from 0)
    ///   and the reason.
    public init(contentsOf path: String) throws(AccessoryError) {
        guard let bytes = SysfsFiles.read(path, limit: .max, untilEndOfFile: true) else {
            throw AccessoryError(.io, "cannot read protocol rules \(path): \(String(cString: strerror(errno)))", operation: "read protocol rules")
        }
        try self.init(json: bytes, file: path)
    }

    /// A table with the rules of JSON text in the format of ``init(contentsOf:)``; `file`
    /// names it in errors.
    init(json bytes: [UInt8], file: String) throws(AccessoryError) {
        func bad(_ reason: String, entry: Int? = nil) -> AccessoryError {
            AccessoryError(
                .invalidArgument, "protocol rules \(file)\(entry.map { ": entry \($0) (counting from 0)" } ?? ""): \(reason)",
                operation: "read protocol rules")
        }
        let entries: [ProtocolRuleEntry]
        do {
            entries = try JSONDecoder().decode([ProtocolRuleEntry].self, from: Data(bytes))
        } catch {
            throw bad("not a JSON array of rules such as [{\"vendor\": \"06cb\", \"product\": \"00bd\", \"interface\": 0, \"protocol\": \"com.example.reader\"}] (\(error))")
        }
        var rules: [ProtocolRule] = []
        for (index, entry) in entries.enumerated() {
            do throws(ProtocolRuleEntry.Problem) {
                rules.append(try entry.rule())
            } catch {
                throw bad(error.reason, entry: index)
            }
        }
        self.init(rules: rules)
    }
}
