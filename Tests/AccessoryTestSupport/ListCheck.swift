import Foundation

/// The project's own check of `accessoryctl list --json` against a umockdev dump: for every
/// USB device in the dump that is not a hub, a row with the same bus, address, vendor and
/// product, and exactly the dump's manufacturer, product and serial strings.
public struct ListCheck: Sendable {
    /// One non-hub device of a dump, as sysfs describes it.
    public struct Device: Sendable, Equatable {
        public var bus: Int
        public var address: Int
        public var vendor: String
        public var product: String
        public var manufacturer: String?
        public var name: String?
        public var serial: String?
    }

    public init() {}

    /// The non-hub USB devices of a umockdev dump (`P:` starts a device, `A:` lines are its
    /// sysfs attributes, with `\n` and `\\` escaped).
    public func devices(inDump text: String) -> [Device] {
        var blocks: [[String: String]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("P: ") {
                blocks.append([:])
            } else if line.hasPrefix("A: "), !blocks.isEmpty, let eq = line.firstIndex(of: "=") {
                let key = String(line[line.index(line.startIndex, offsetBy: 3)..<eq])
                var value = Self.unescape(line[line.index(after: eq)...])
                if value.hasSuffix("\n") { value.removeLast() }
                blocks[blocks.count - 1][key] = value
            }
        }
        return blocks.compactMap { a in
            guard let vendor = a["idVendor"], let product = a["idProduct"], let bus = a["busnum"].flatMap({ Int($0) }),
                let address = a["devnum"].flatMap({ Int($0) }), a["bDeviceClass"] != "09"
            else { return nil }
            return Device(
                bus: bus, address: address, vendor: vendor.lowercased(), product: product.lowercased(),
                manufacturer: a["manufacturer"], name: a["product"], serial: a["serial"])
        }
    }

    /// The problems found; empty when `listJSON` matches the dump.
    public func problems(dump: String, listJSON: String) -> [String] {
        guard let rows = (try? JSONSerialization.jsonObject(with: Data(listJSON.utf8))) as? [[String: Any]] else {
            return ["list --json did not print one JSON array of objects"]
        }
        var problems: [String] = []
        for want in devices(inDump: dump) {
            guard let row = rows.first(where: { $0["bus"] as? Int == want.bus && $0["address"] as? Int == want.address }) else {
                problems.append("no row for bus \(want.bus) address \(want.address) (\(want.vendor):\(want.product))")
                continue
            }
            let pairs: [(String, String?)] = [
                ("vendor", want.vendor), ("product", want.product), ("manufacturer", want.manufacturer),
                ("name", want.name), ("serial", want.serial),
            ]
            for (key, expected) in pairs {
                var got = row[key] as? String
                if key == "vendor" || key == "product" { got = got?.lowercased() }
                if (expected?.isEmpty == false ? expected : nil) != (got?.isEmpty == false ? got : nil) {
                    problems.append("\(want.vendor):\(want.product) \(key): want \(expected ?? "nil"), got \(got ?? "nil")")
                }
            }
        }
        return problems
    }

    private static func unescape(_ s: Substring) -> String {
        var out = ""
        var escaped = false
        for c in s {
            if escaped {
                out.append(c == "n" ? "\n" : c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        return out
    }
}
