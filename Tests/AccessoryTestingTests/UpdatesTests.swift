import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

/// The bounded notification stream: a subscriber that falls behind costs bounded memory and
/// still ends up with the truth, its stream's promise kept.
@Suite("Bounded updates")
struct UpdatesTests {
    /// Checks a subscriber's stream: one connect per ID before at most one disconnect, no
    /// disconnect of an ID it was not told of; returns what it believes connected.
    static func replay(_ updates: [AccessoryUpdate]) -> (connected: [ConnectionID: Accessory], marks: Int) {
        var connected: [ConnectionID: Accessory] = [:]
        var ended: Set<ConnectionID> = []
        var marks = 0
        for update in updates {
            switch update {
            case .resynchronized: marks += 1
            case .event(.connected(let a)):
                #expect(connected[a.connectionID] == nil && !ended.contains(a.connectionID), "a second connect of \(a.connectionID)")
                connected[a.connectionID] = a
            case .event(.disconnected(let a, _)):
                #expect(connected.removeValue(forKey: a.connectionID) != nil, "a disconnect of \(a.connectionID), never connected")
                ended.insert(a.connectionID)
            }
        }
        return (connected, marks)
    }

    /// Takes up to `count` updates of those waiting, never waiting for more.
    static func drain(_ updates: AccessoryUpdates, _ iterator: inout AccessoryUpdates.Iterator, upTo count: Int = .max) async -> [AccessoryUpdate] {
        var taken: [AccessoryUpdate] = []
        while taken.count < count, updates.bufferedCount > 0, let u = await iterator.next() { taken.append(u) }
        return taken
    }

    @Test("A subscriber that reads nothing through 10,000 plug/unplug cycles holds at most its limit, then catches up with a mark and the difference")
    func stalledSubscriber() async throws {
        let usb = SimulatedUSB()
        let keeper = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "KEEP"))
        try await withAccessoryManager(usb: usb) { manager in
            let updates = await manager.updates(bufferLimit: 64)
            var iterator = updates.makeAsyncIterator()
            var peak = 0
            for n in 0..<5_000 {
                let d = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "F\(n % 7)"))
                await usb.unplug(d)
                peak = max(peak, updates.bufferedCount)
            }
            let last = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0003, serial: "LAST"))
            #expect(peak <= 65, "the buffer grew to \(peak)")
            let now = await manager.connectedAccessories
            let taken = await Self.drain(updates, &iterator)
            let (seen, marks) = Self.replay(taken)
            #expect(marks >= 1)
            #expect(Set(seen.keys) == Set(now.map(\.connectionID)), "the subscriber ends with the truth")
            #expect(seen.values.contains { $0.descriptor.address == last.address } && seen.values.contains { $0.descriptor.address == keeper.address })
            #expect(taken.count < 200, "\(taken.count) updates: collapsed, not replayed")
        }
    }

    @Test("Random plugs, unplugs and reader pauses: the promise holds and the reader ends with the truth", arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func randomPauses(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            let limit = 4 + Int(rng.next() % 16)
            let updates = await manager.updates(bufferLimit: limit)
            var iterator = updates.makeAsyncIterator()
            var plugged: [SimulatedDevice] = []
            var taken: [AccessoryUpdate] = []
            for step in 0..<400 {
                if plugged.isEmpty || rng.next() % 3 != 0 {
                    plugged.append(await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "S\(step)")))
                } else {
                    let i = Int(rng.next() % UInt64(plugged.count))
                    await usb.unplug(plugged.remove(at: i))
                }
                if rng.next() % 5 == 0 {
                    taken += await Self.drain(updates, &iterator, upTo: Int(rng.next() % UInt64(2 * limit)) + 1)
                }
                #expect(updates.bufferedCount <= limit + 400, "bounded by the limit plus one difference")
            }
            taken += await Self.drain(updates, &iterator)
            let (seen, _) = Self.replay(taken)
            #expect(Set(seen.keys) == Set(await manager.connectedAccessories.map(\.connectionID)))
        }
    }
}
