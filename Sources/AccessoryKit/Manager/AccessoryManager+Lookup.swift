import AccessoryCore

extension AccessoryManager {
    /// The connected accessories `target` names, in connection-ID order: by IDs (and
    /// serial), by serial, by port, or by bus and address, as `accessoryctl open` matches.
    public func accessories(matching target: AccessoryTarget) -> [Accessory] {
        connectedAccessories.filter(target.matches)
    }

    /// The one connected accessory `target` names.
    /// - Throws: `.notFound` when none matches (the message lists what is connected) or when
    ///   several do, such as two accessories with one VID:PID and serial (the message names
    ///   each one's port: open by port instead).
    public func accessory(matching target: AccessoryTarget) throws(AccessoryError) -> Accessory {
        let present = connectedAccessories
        let matching = present.filter(target.matches)
        if matching.count == 1 { return matching[0] }
        let describe = { (a: Accessory) in "\(a.descriptor.vendorProduct) \(a.descriptor.serial ?? "-") on \(a.descriptor.port)" }
        if matching.isEmpty {
            throw AccessoryError(
                .notFound,
                "no accessory matches \(target); "
                    + (present.isEmpty ? "no accessory is connected" : "present: \(present.map(describe).joined(separator: ", "))"),
                operation: "find accessory")
        }
        throw AccessoryError(
            .notFound,
            "\(matching.count) accessories match \(target): \(matching.map(describe).joined(separator: ", ")); add the serial or give the port",
            operation: "find accessory")
    }
}
