import AccessoryCore
import AccessoryTraces
import AccessoryKit
import AccessoryTesting
import Testing
import AccessoryLocking

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

    @Test("A subscriber that reads nothing through 5,000 plug/unplug cycles (10,000 notifications) holds at most its limit, then catches up with a mark and the difference")
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
                // At most the limit, a mark, and one difference: departures of what this reader
                // holds connected, and arrivals of what is plugged now (the keeper too).
                let held = Self.replay(taken).connected.count
                #expect(updates.bufferedCount <= limit + 1 + held + plugged.count + 1, "bounded by the limit plus one difference")
            }
            taken += await Self.drain(updates, &iterator)
            let (seen, _) = Self.replay(taken)
            #expect(Set(seen.keys) == Set(await manager.connectedAccessories.map(\.connectionID)))
        }
    }

    /// Waits, up to `timeout`, for `condition` to hold; says whether it did.
    static func within(_ timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
    }

    @Test("A disconnect keeps its real reason when the subscriber falls behind twice before it reads the difference")
    func twoOverflowsKeepTheReason() async throws {
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            let updates = await manager.updates(bufferLimit: 2)
            var iterator = updates.makeAsyncIterator()
            let x = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "X"))
            guard case .event(.connected(let seenX))? = await iterator.next() else { Issue.record("no connect of X"); return }
            await usb.unplug(x)
            for n in 0..<3 { await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "A\(n)")) }
            #expect(await iterator.next() == .resynchronized(missed: 4))
            // Behind again before reading the difference the first mark announced.
            for n in 0..<3 { await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0003, serial: "B\(n)")) }
            let taken = await Self.drain(updates, &iterator)
            let reasons = taken.compactMap { u -> DisconnectReason? in
                if case .event(.disconnected(let a, let reason)) = u, a.connectionID == seenX.connectionID { return reason }
                return nil
            }
            #expect(reasons == [.unplugged], "X's disconnect came as \(reasons)")
            let (seen, _) = Self.replay([.event(.connected(seenX))] + taken)
            #expect(Set(seen.keys) == Set(await manager.connectedAccessories.map(\.connectionID)))
        }
    }

    @Test("Random plugs, unplugs and read points with tiny limits: every disconnect carries the reason the manager sent", arguments: 1...12)
    func randomReadPointsKeepReasons(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed &* 7919)
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            let sent = Locked<[ConnectionID: DisconnectReason]>([:])
            manager.fanOut.observe { event in
                if case .disconnected(let a, let reason) = event { sent.withLock { $0[a.connectionID] = reason } }
            }
            let limit = 1 + Int(rng.next() % 3)
            let updates = await manager.updates(bufferLimit: limit)
            var iterator = updates.makeAsyncIterator()
            var plugged: [SimulatedDevice] = []
            var taken: [AccessoryUpdate] = []
            for step in 0..<300 {
                switch rng.next() % 4 {
                case 0 where !plugged.isEmpty:
                    await usb.unplug(plugged.remove(at: Int(rng.next() % UInt64(plugged.count))))
                case 1 where !plugged.isEmpty:
                    let i = Int(rng.next() % UInt64(plugged.count))
                    plugged[i] = await usb.replug(plugged[i])
                default:
                    plugged.append(await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "S\(step)")))
                }
                if rng.next() % 3 == 0 {
                    taken += await Self.drain(updates, &iterator, upTo: Int(rng.next() % UInt64(2 * limit + 2)) + 1)
                }
            }
            taken += await Self.drain(updates, &iterator)
            let (seen, marks) = Self.replay(taken)
            #expect(marks > 0, "the limit of \(limit) was never passed")
            #expect(Set(seen.keys) == Set(await manager.connectedAccessories.map(\.connectionID)))
            let real = sent.withLock { $0 }
            for case .event(.disconnected(let a, let reason)) in taken {
                #expect(reason == real[a.connectionID], "\(a.connectionID) left as \(String(describing: real[a.connectionID])), told \(reason)")
            }
        }
    }

    @Test("Leaving an updates() loop with break unsubscribes it, as for events() and monitorEvents()")
    func breakUnsubscribes() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "KEEP"))
        try await withAccessoryManager(usb: usb) { manager in
            #expect(await manager.subscriberCount == 0)
            for await _ in await manager.updates(bufferLimit: 8) { break }
            #expect(await Self.within { await manager.subscriberCount == 0 }, "the updates() buffer stays registered")
            for await _ in await manager.events() { break }
            #expect(await Self.within { await manager.subscriberCount == 0 }, "the events() stream stays registered")
            for await _ in await manager.monitorEvents() { break }
            #expect(await Self.within { await manager.subscriberCount == 0 }, "the monitor tap stays registered")
            do {
                let kept = await manager.updates(bufferLimit: 8)
                #expect(await manager.subscriberCount == 1, "registered while the sequence lives")
                for await _ in kept { break }
                _ = kept.bufferedCount
            }
            #expect(await Self.within { await manager.subscriberCount == 0 })
        }
    }

    @Test("A task cancelled while it waits on updates() unsubscribes it")
    func cancelUnsubscribes() async throws {
        let usb = SimulatedUSB()
        try await withAccessoryManager(usb: usb) { manager in
            let reader = Task {
                var count = 0
                for await _ in await manager.updates() { count += 1 }
                return count
            }
            #expect(await Self.within { await manager.subscriberCount == 1 })
            reader.cancel()
            #expect(await reader.value == 0)
            #expect(await Self.within { await manager.subscriberCount == 0 })
        }
    }

    @Test("Two tasks iterating one updates() sequence each get the whole stream; neither hangs")
    func twoIterators() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "KEEP"))
        try await withAccessoryManager(usb: usb) { manager in
            let updates = await manager.updates(bufferLimit: 8)
            @Sendable func firstTwo() async -> [AccessoryUpdate] {
                var taken: [AccessoryUpdate] = []
                for await u in updates {
                    taken.append(u)
                    if taken.count == 2 { break }
                }
                return taken
            }
            async let a = firstTwo()
            async let b = firstTwo()
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0003, serial: "NEW"))
            let (ta, tb) = await (a, b)
            let now = await manager.connectedAccessories.map { AccessoryUpdate.event(.connected($0)) }
            #expect(ta == now)
            #expect(tb == now)
        }
    }

    @Test("Without includingCurrent, an accessory connected before subscribing that leaves while the subscriber is behind is reported gone, with its reason")
    func knownAccessoryLeavesWhileBehind() async throws {
        let usb = SimulatedUSB()
        let early = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "EARLY"))
        try await withAccessoryManager(usb: usb) { manager in
            let before = await manager.connectedAccessories
            let updates = await manager.updates(includingCurrent: false, bufferLimit: 2)
            var iterator = updates.makeAsyncIterator()
            await usb.unplug(early)
            for n in 0..<3 { await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0003, serial: "L\(n)")) }
            let taken = await Self.drain(updates, &iterator)
            #expect(taken.first == .resynchronized(missed: 4))
            let gone = taken.compactMap { u -> DisconnectReason? in
                if case .event(.disconnected(let a, let reason)) = u, a.connectionID == before.first?.connectionID { return reason }
                return nil
            }
            #expect(gone == [.unplugged], "the early accessory's disconnect came as \(gone)")
            var believed = Dictionary(uniqueKeysWithValues: before.map { ($0.connectionID, $0) })
            for case .event(let e) in taken {
                switch e {
                case .connected(let a): believed[a.connectionID] = a
                case .disconnected(let a, _): believed[a.connectionID] = nil
                }
            }
            #expect(Set(believed.keys) == Set(await manager.connectedAccessories.map(\.connectionID)))
        }
    }
}
