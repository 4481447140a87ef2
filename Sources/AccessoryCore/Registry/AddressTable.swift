/// The registry's map from bus and address to connection, as a table: Linux numbers buses
/// from 1 and addresses 1…127, so a look-up is two indexes rather than a hash. Keys outside
/// buses 0…255 and addresses 0…127 (which no kernel gives, but the registry's API allows)
/// go to a dictionary.
struct AddressTable: Sendable {
    /// `rows[bus][address]`, ``ConnectionID/none`` where there is no entry. A bus's row is
    /// made when a key on it is first stored.
    private var rows: [[ConnectionID]] = []
    private var overflow: [DeviceKey: ConnectionID] = [:]

    private static let addresses = 128
    private static let buses = 256

    @inline(__always)
    private static func fits(_ key: DeviceKey) -> Bool {
        key.bus >= 0 && key.bus < buses && key.address >= 0 && key.address < addresses
    }

    subscript(key: DeviceKey) -> ConnectionID? {
        get {
            guard Self.fits(key) else { return overflow[key] }
            guard key.bus < rows.count, !rows[key.bus].isEmpty else { return nil }
            let id = rows[key.bus][key.address]
            return id == .none ? nil : id
        }
        set {
            guard Self.fits(key) else {
                overflow[key] = newValue
                return
            }
            if key.bus >= rows.count {
                guard newValue != nil else { return }
                rows.append(contentsOf: repeatElement([], count: key.bus + 1 - rows.count))
            }
            if rows[key.bus].isEmpty {
                guard newValue != nil else { return }
                rows[key.bus] = Array(repeating: .none, count: Self.addresses)
            }
            rows[key.bus][key.address] = newValue ?? .none
        }
    }

    /// Removes the entry at `key` if it is `id`.
    mutating func remove(_ key: DeviceKey, ifItIs id: ConnectionID) {
        if self[key] == id { self[key] = nil }
    }
}
