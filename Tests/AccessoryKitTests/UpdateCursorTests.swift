import AccessoryCore
import AccessoryTraces
import Testing
@testable import AccessoryKit

/// One reader's place in a bounded update stream, driven directly: random notifications, random
/// read points and tiny limits against what was really sent.
@Suite("UpdateCursor")
struct UpdateCursorTests {
    static func accessory(_ id: UInt64) -> Accessory {
        Accessory(connectionID: ConnectionID(rawValue: id), descriptor: AccessoryDescriptor(bus: 1, address: Int(id % 127) + 1, port: "1-\(id)"))
    }

    static let reasons: [DisconnectReason] = [
        .unplugged, .shutdown, .ghostEvicted(.noDevice(operation: "bulk-in")),
        .ghostEvicted(.portReplaced(by: AccessoryDescriptor(bus: 1, address: 9, port: "1-9"))),
    ]

    /// What a reader knows from the updates it took, checked against the stream's promise and
    /// the reasons really sent as it goes.
    struct Reader {
        var believed: [ConnectionID: Accessory]
        var ended: Set<ConnectionID> = []
        var marks = 0

        mutating func take(_ update: AccessoryUpdate, sent: [ConnectionID: DisconnectReason]) {
            switch update {
            case .resynchronized: marks += 1
            case .event(.connected(let a)):
                #expect(believed[a.connectionID] == nil && !ended.contains(a.connectionID), "a second connect of \(a.connectionID)")
                believed[a.connectionID] = a
            case .event(.disconnected(let a, let reason)):
                #expect(believed.removeValue(forKey: a.connectionID) != nil, "a disconnect of \(a.connectionID), never connected")
                #expect(reason == sent[a.connectionID], "\(a.connectionID) left as \(String(describing: sent[a.connectionID])), told \(reason)")
                ended.insert(a.connectionID)
            }
        }
    }

    @Test("Random notifications and read points: the reader ends with the truth, every disconnect with its real reason", arguments: 0..<200)
    func randomReadPoints(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let limit = 1 + Int(rng.next() % 4)
        // Some accessories are there before the reader subscribes, and it is taken to know them.
        var current: [ConnectionID: Accessory] = [:]
        var nextID: UInt64 = 1
        for _ in 0..<rng.next() % 3 {
            current[ConnectionID(rawValue: nextID)] = Self.accessory(nextID)
            nextID += 1
        }
        var cursor = UpdateCursor(limit: limit, seen: current)
        var reader = Reader(believed: current)
        var sent: [ConnectionID: DisconnectReason] = [:]
        var peak = current.count
        for _ in 0..<300 {
            if current.isEmpty || rng.next() % 2 == 0 {
                let a = Self.accessory(nextID)
                nextID += 1
                current[a.connectionID] = a
                cursor.push(.connected(a))
            } else {
                let id = current.keys.sorted()[Int(rng.next() % UInt64(current.count))]
                let reason = Self.reasons[Int(rng.next() % UInt64(Self.reasons.count))]
                sent[id] = reason
                cursor.push(.disconnected(current.removeValue(forKey: id)!, reason))
            }
            peak = max(peak, current.count)
            #expect(cursor.count <= limit + 1 + reader.believed.count + peak, "bounded by the limit and one difference")
            if rng.next() % 4 == 0 {
                for _ in 0..<rng.next() % UInt64(limit + 3) {
                    guard let update = cursor.next(current: current) else { break }
                    reader.take(update, sent: sent)
                }
            }
        }
        while let update = cursor.next(current: current) { reader.take(update, sent: sent) }
        #expect(reader.believed == current, "the reader ends with the truth")
        #expect(cursor.seen == current)
    }

    @Test("Behind twice before the first difference is read: the disconnect in it keeps its reason")
    func twoMarksInARow() {
        let x = Self.accessory(1)
        var cursor = UpdateCursor(limit: 2, seen: [x.connectionID: x])
        var current: [ConnectionID: Accessory] = [:]
        cursor.push(.disconnected(x, .shutdown))
        for id in UInt64(2)...4 {
            current[ConnectionID(rawValue: id)] = Self.accessory(id)
            cursor.push(.connected(Self.accessory(id)))
        }
        #expect(cursor.next(current: current) == .resynchronized(missed: 4))
        for id in UInt64(5)...7 {
            current[ConnectionID(rawValue: id)] = Self.accessory(id)
            cursor.push(.connected(Self.accessory(id)))
        }
        #expect(cursor.next(current: current) == .resynchronized(missed: 3))
        #expect(cursor.next(current: current) == .event(.disconnected(x, .shutdown)))
    }

    @Test("A reader taken to know an accessory hears of its disconnect though it fell behind meanwhile")
    func knownAccessoryLeavesWhileBehind() {
        let x = Self.accessory(1)
        var cursor = UpdateCursor(limit: 1, seen: [x.connectionID: x])
        var current: [ConnectionID: Accessory] = [:]
        cursor.push(.connected(Self.accessory(2)))
        current[ConnectionID(rawValue: 2)] = Self.accessory(2)
        cursor.push(.disconnected(x, .unplugged))
        #expect(cursor.next(current: current) == .resynchronized(missed: 2))
        #expect(cursor.next(current: current) == .event(.disconnected(x, .unplugged)))
        #expect(cursor.next(current: current) == .event(.connected(Self.accessory(2))))
        #expect(cursor.next(current: current) == nil)
    }
}
