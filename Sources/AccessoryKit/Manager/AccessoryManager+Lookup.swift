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
        try target.one(of: connectedAccessories)
    }

    /// `.notFound`: `accessory` is no longer connected.
    static func notConnected(_ accessory: Accessory, operation: String) -> AccessoryError {
        AccessoryError(
            .notFound, "accessory \(AccessorySession.label(accessory)) (connection \(accessory.connectionID)) is not connected",
            operation: operation)
    }
}
