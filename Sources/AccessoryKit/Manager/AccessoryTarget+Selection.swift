import AccessoryCore

extension AccessoryTarget {
    /// The one accessory of `present` this target names.
    /// - Throws: `.notFound` when none matches (the message lists what is present) or when
    ///   several do (the message names each one's port).
    func one(of present: [Accessory]) throws(AccessoryError) -> Accessory {
        let matching = present.filter(matches)
        if matching.count == 1 { return matching[0] }
        let describe = { (a: Accessory) in "\(a.descriptor.vendorProduct) \(a.descriptor.serial ?? "-") on \(a.descriptor.port)" }
        if matching.isEmpty {
            throw AccessoryError(
                .notFound,
                "no accessory matches \(self); "
                    + (present.isEmpty ? "no accessory is connected" : "present: \(present.map(describe).joined(separator: ", "))"),
                operation: "find accessory")
        }
        throw AccessoryError(
            .notFound,
            "\(matching.count) accessories match \(self): \(matching.map(describe).joined(separator: ", ")); add the serial or give the port",
            operation: "find accessory")
    }
}
