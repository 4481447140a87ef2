import AccessoryCore
import Testing
@testable import AccessoryKit
import AccessoryLocking

/// The manager's one registry of subscribers, driven directly: every kind gets what it
/// should, and every kind is forgotten when its reader goes away.
@Suite("SubscriberFanOut")
struct SubscriberFanOutTests {
    static func accessory(_ id: UInt64) -> Accessory {
        Accessory(connectionID: ConnectionID(rawValue: id), descriptor: AccessoryDescriptor(bus: 1, address: Int(id), port: "1-\(id)"))
    }

    /// Waits, up to `timeout`, for `condition` to hold; says whether it did.
    static func within(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test("Each kind gets its first events, then what is sent, in order; monitors get only what is tapped")
    func delivery() async {
        let fanOut = SubscriberFanOut()
        let a = Self.accessory(1), b = Self.accessory(2)
        let observed = Locked<[AccessoryEvent]>([])
        fanOut.observe { event in observed.withLock { $0.append(event) } }
        var events = fanOut.events(first: [.connected(a)]).makeAsyncIterator()
        let updates = fanOut.updates(limit: 8, current: [a], includingCurrent: true)
        var monitor = fanOut.monitor(first: .snapshot([a.descriptor])).makeAsyncIterator()
        #expect(fanOut.count == 4 && fanOut.isTapped)
        fanOut.send(.connected(b))
        fanOut.tap(.added(b.descriptor))
        fanOut.send(.disconnected(a, .unplugged))
        fanOut.finish()
        var gotEvents: [AccessoryEvent] = []
        while let e = await events.next() { gotEvents.append(e) }
        var gotUpdates: [AccessoryUpdate] = []
        for await u in updates { gotUpdates.append(u) }
        var gotMonitor: [HotplugEvent] = []
        while let e = await monitor.next() { gotMonitor.append(e) }
        #expect(gotEvents == [.connected(a), .connected(b), .disconnected(a, .unplugged)])
        #expect(gotUpdates == gotEvents.map(AccessoryUpdate.event))
        #expect(observed.withLock { $0 } == [.connected(b), .disconnected(a, .unplugged)])
        #expect(gotMonitor == [.snapshot([a.descriptor]), .added(b.descriptor)])
        #expect(fanOut.count == 0 && !fanOut.isTapped)
    }

    @Test("A batch reaches every kind of subscriber whole and in order, after what was sent before it")
    func batch() async {
        let fanOut = SubscriberFanOut()
        let a = Self.accessory(1), b = Self.accessory(2), c = Self.accessory(3)
        let observed = Locked<[AccessoryEvent]>([])
        fanOut.observe { event in observed.withLock { $0.append(event) } }
        let events = fanOut.events(first: [])
        let updates = fanOut.updates(limit: 8, current: [], includingCurrent: true)
        // A reader already waiting when the batch comes takes its first element, the rest
        // from its buffer.
        let reader = Task {
            var got: [AccessoryUpdate] = []
            for await u in updates { got.append(u) }
            return got
        }
        fanOut.send(.connected(a))
        let batch: [AccessoryEvent] = [.connected(b), .disconnected(a, .unplugged), .connected(c)]
        fanOut.send(contentsOf: batch)
        fanOut.send(contentsOf: [])
        fanOut.finish()
        var gotEvents: [AccessoryEvent] = []
        for await e in events { gotEvents.append(e) }
        let all = [AccessoryEvent.connected(a)] + batch
        #expect(gotEvents == all)
        #expect(await reader.value == all.map(AccessoryUpdate.event))
        #expect(observed.withLock { $0 } == all)
    }

    @Test("After finish, a new subscriber of any kind gets a finished stream and is not registered")
    func afterFinish() async {
        let fanOut = SubscriberFanOut()
        fanOut.finish()
        var events = fanOut.events(first: [.connected(Self.accessory(1))]).makeAsyncIterator()
        var updates = fanOut.updates(limit: 4, current: [], includingCurrent: true).makeAsyncIterator()
        var monitor = fanOut.monitor(first: .snapshot([])).makeAsyncIterator()
        fanOut.observe { _ in Issue.record("an observer called after finish") }
        fanOut.send(.connected(Self.accessory(2)))
        #expect(await events.next() == nil)
        #expect(await updates.next() == nil)
        #expect(await monitor.next() == nil)
        #expect(fanOut.count == 0)
    }

    @Test("Dropping a stream or an update sequence and its iterators unregisters it")
    func dropUnregisters() async {
        let fanOut = SubscriberFanOut()
        do {
            var events = fanOut.events(first: [.connected(Self.accessory(1))]).makeAsyncIterator()
            _ = await events.next()
        }
        #expect(await Self.within { fanOut.count == 0 }, "events() stays registered")
        do {
            var monitor = fanOut.monitor(first: .snapshot([])).makeAsyncIterator()
            _ = await monitor.next()
        }
        #expect(await Self.within { fanOut.count == 0 && !fanOut.isTapped }, "monitor stays registered")
        do {
            let updates = fanOut.updates(limit: 4, current: [Self.accessory(1)], includingCurrent: true)
            var iterator = updates.makeAsyncIterator()
            _ = await iterator.next()
            #expect(fanOut.count == 1)
            #expect(updates.buffer.readerCount == 1)
        }
        #expect(await Self.within { fanOut.count == 0 }, "updates() stays registered")
        for _ in 0..<100 { fanOut.send(.connected(Self.accessory(9))) }
    }

    @Test("An update iterator that goes away frees its reader while the sequence stays registered")
    func iteratorFreesItsReader() async {
        let fanOut = SubscriberFanOut()
        let updates = fanOut.updates(limit: 4, current: [], includingCurrent: true)
        do {
            var first = updates.makeAsyncIterator()
            var second = updates.makeAsyncIterator()
            fanOut.send(.connected(Self.accessory(1)))
            #expect(await first.next() == .event(.connected(Self.accessory(1))))
            #expect(await second.next() == .event(.connected(Self.accessory(1))))
            #expect(updates.buffer.readerCount == 2)
        }
        #expect(updates.buffer.readerCount == 0)
        #expect(fanOut.count == 1)
        // A later iterator starts from what is connected now.
        var third = updates.makeAsyncIterator()
        #expect(await third.next() == .event(.connected(Self.accessory(1))))
    }

    @Test("Cancelling a task that waits on an update iterator ends that iterator only")
    func cancelEndsOneReader() async {
        let fanOut = SubscriberFanOut()
        let updates = fanOut.updates(limit: 4, current: [], includingCurrent: true)
        var kept = updates.makeAsyncIterator()
        let waiting = Task {
            var iterator = updates.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await Self.within { updates.buffer.readerCount == 2 })
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(updates.buffer.readerCount == 1)
        fanOut.send(.connected(Self.accessory(1)))
        #expect(await kept.next() == .event(.connected(Self.accessory(1))))
    }
}
