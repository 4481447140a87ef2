import AccessoryCore
import Testing
@testable import AccessoryKit

/// The manager's session bookkeeping, driven directly: one session or open per connection
/// and protocol, default names, lookups by connection and interface, and the shutdown order.
@Suite("SessionTable")
struct SessionTableTests {
    struct Record: SessionRecord, Equatable {
        var name: String
        var interfaceNumber: UInt8
        var serial = 0
    }

    static func key(_ connection: UInt64, _ protocolName: String = "org.example.loopback") -> SessionKey {
        SessionKey(connection: ConnectionID(rawValue: connection), protocolName: protocolName)
    }

    /// The name a reservation gave, or `nil` when it was refused.
    static func reservedName(_ reservation: SessionTable<Record>.Reservation) -> String? {
        if case .reserved(let name) = reservation { return name }
        return nil
    }

    @Test("a reservation names the session: the given name, else session-N counting every reservation")
    func names() {
        var table = SessionTable<Record>()
        #expect(Self.reservedName(table.reserve(Self.key(1), name: nil)) == "session-1")
        #expect(Self.reservedName(table.reserve(Self.key(2), name: "mine")) == "mine")
        #expect(Self.reservedName(table.reserve(Self.key(3), name: nil)) == "session-3")
        #expect(table.isOpening(Self.key(1)) && table.isOpening(Self.key(2)) && table.isOpening(Self.key(3)))
        #expect(table.count == 0)
    }

    @Test("a key being opened or held is refused; another protocol or connection is not")
    func refusals() {
        var table = SessionTable<Record>()
        #expect(Self.reservedName(table.reserve(Self.key(1), name: "a")) == "a")
        guard case .beingOpened = table.reserve(Self.key(1), name: "b") else {
            Issue.record("a second open of a key being opened was not refused")
            return
        }
        #expect(Self.reservedName(table.reserve(Self.key(1, "other"), name: "c")) == "c")
        #expect(Self.reservedName(table.reserve(Self.key(2), name: "d")) == "d")

        table.open(Self.key(1), Record(name: "a", interfaceNumber: 0))
        table.endReservation(Self.key(1))
        #expect(!table.isOpening(Self.key(1)))
        guard case .held(let holder) = table.reserve(Self.key(1), name: "e") else {
            Issue.record("an open of a held key was not refused")
            return
        }
        #expect(holder.name == "a")
    }

    @Test("a failed open ends its reservation: the key can be opened again")
    func failedOpen() {
        var table = SessionTable<Record>()
        _ = table.reserve(Self.key(1), name: nil)
        table.endReservation(Self.key(1))
        #expect(Self.reservedName(table.reserve(Self.key(1), name: nil)) == "session-2")
        #expect(table[Self.key(1)] == nil)
    }

    @Test("lookups by connection and by claimed interface")
    func lookups() {
        var table = SessionTable<Record>()
        table.open(Self.key(1, "p"), Record(name: "p", interfaceNumber: 0))
        table.open(Self.key(1, "q"), Record(name: "q", interfaceNumber: 2))
        table.open(Self.key(2, "p"), Record(name: "r", interfaceNumber: 2))
        #expect(Set(table.sessions(on: ConnectionID(rawValue: 1)).map(\.name)) == ["p", "q"])
        #expect(table.sessions(on: ConnectionID(rawValue: 3)).isEmpty)
        #expect(table.session(on: ConnectionID(rawValue: 1), interface: 2)?.name == "q")
        #expect(table.session(on: ConnectionID(rawValue: 2), interface: 2)?.name == "r")
        #expect(table.session(on: ConnectionID(rawValue: 2), interface: 0) == nil)
        #expect(table.count == 3)
    }

    @Test("a close forgets only the record it names, not a later session under the same key")
    func close() {
        var table = SessionTable<Record>()
        table.open(Self.key(1), Record(name: "a", interfaceNumber: 0, serial: 1))
        table.close(Self.key(1)) { $0.serial == 2 }
        #expect(table[Self.key(1)]?.serial == 1)
        table.close(Self.key(1)) { $0.serial == 1 }
        #expect(table[Self.key(1)] == nil)
        #expect(table.count == 0)
    }

    @Test("shutdown closes in name order")
    func nameOrder() {
        var table = SessionTable<Record>()
        for (i, name) in ["c", "a", "b"].enumerated() {
            table.open(Self.key(UInt64(i + 1)), Record(name: name, interfaceNumber: 0))
        }
        #expect(table.inNameOrder.map(\.name) == ["a", "b", "c"])
    }
}
