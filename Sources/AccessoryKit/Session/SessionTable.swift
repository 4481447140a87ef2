import AccessoryCore

/// What the session table needs to know of a record: its name and its claimed interface.
protocol SessionRecord {
    var name: String { get }
    var interfaceNumber: UInt8 { get }
}

/// The manager's open sessions and the opens under way, by connection and protocol: at most
/// one of either per key. A value the manager's actor holds; `Record` is what it keeps per
/// session (``SessionEntry``; tests use their own).
struct SessionTable<Record: SessionRecord> {
    /// The outcome of ``reserve(_:name:)``.
    enum Reservation {
        /// The key is reserved for an open under way, whose session is called `name`.
        case reserved(name: String)
        /// A session holds the key.
        case held(by: Record)
        /// Another open of the key is under way.
        case beingOpened
    }

    private var byKey: [SessionKey: Record] = [:]
    private var opening: Set<SessionKey> = []
    /// Numbers default session names: `session-1`, `session-2`, …
    private var counter = 0

    /// Reserves `key` for an open, unless a session holds it or another open of it is under
    /// way. A reservation uses up a default name (`session-N`) even when `name` is given.
    mutating func reserve(_ key: SessionKey, name: String?) -> Reservation {
        if let holder = byKey[key] { return .held(by: holder) }
        guard !opening.contains(key) else { return .beingOpened }
        opening.insert(key)
        counter += 1
        return .reserved(name: name ?? "session-\(counter)")
    }

    /// Ends the reservation of `key`, whether its open succeeded or not.
    mutating func endReservation(_ key: SessionKey) {
        opening.remove(key)
    }

    /// Records the session opened under `key`.
    mutating func open(_ key: SessionKey, _ record: Record) {
        byKey[key] = record
    }

    /// Forgets the session under `key` if `isIt` says the record is that session's (a later
    /// session under the same key stays).
    mutating func close(_ key: SessionKey, if isIt: (Record) -> Bool) {
        if let record = byKey[key], isIt(record) { byKey[key] = nil }
    }

    /// The session under `key`, if one is open.
    subscript(key: SessionKey) -> Record? { byKey[key] }

    /// Whether an open of `key` is under way.
    func isOpening(_ key: SessionKey) -> Bool { opening.contains(key) }

    /// The sessions open on a connection.
    func sessions(on connection: ConnectionID) -> [Record] {
        byKey.filter { $0.key.connection == connection }.map(\.value)
    }

    /// The session open on a connection that has claimed `interface`, if any.
    func session(on connection: ConnectionID, interface: UInt8) -> Record? {
        byKey.first { $0.key.connection == connection && $0.value.interfaceNumber == interface }?.value
    }

    /// Every open session, in name order: what shutdown closes, one by one (each close
    /// removes its own with ``close(_:if:)``).
    var inNameOrder: [Record] {
        byKey.values.sorted { $0.name < $1.name }
    }

    /// How many sessions are open.
    var count: Int { byKey.count }
}
