import AccessoryCore
import AccessoryLocking
import Testing
@testable import AccessoryKit

/// The manager's inbox, between libusb's event thread (and the sessions' completions) and
/// the manager: order, batches, news, the end.
@Suite("HotplugNoticeQueue")
struct HotplugNoticeQueueTests {
    static func notice(_ address: Int, _ kind: HotplugNotice.Kind = .arrived) -> HotplugNotice {
        let device = USBDeviceDescriptor(
            bcdUSB: 0x0200, deviceClass: 0, deviceSubclass: 0, deviceProtocol: 0, maxPacketSize0: 64, vendor: 0x1209,
            product: 0x0001, bcdDevice: 0x0100, manufacturerIndex: 0, productIndex: 0, serialNumberIndex: 0,
            configurationCount: 1)
        return HotplugNotice(kind: kind, device: USBDeviceRecord(bus: 1, address: address, portNumbers: [1], device: device))
    }

    /// Whether `q`'s consumer is waiting in `next()` within 10 s (known to wait, not merely
    /// given time to).
    static func waitUntilWaiting(_ q: HotplugNoticeQueue) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !q.isConsumerWaiting {
            guard ContinuousClock.now < deadline else { return false }
            await Task.yield()
        }
        return true
    }

    @Test("Notices queued while nobody waits come out as one batch, in order")
    func batches() async {
        let queue = HotplugNoticeQueue()
        for a in 2...6 { queue.yield(Self.notice(a, a.isMultiple(of: 2) ? .arrived : .left)) }
        let batch = await queue.next().notices
        #expect(batch.map(\.descriptor.address) == [2, 3, 4, 5, 6])
        #expect(batch.map(\.kind) == [.arrived, .left, .arrived, .left, .arrived])
        queue.yield(Self.notice(7))
        #expect(await queue.next().notices.map(\.descriptor.address) == [7])
    }

    @Test("A waiting consumer gets the next notice; many producers lose none and reorder none of one producer's")
    func concurrentProducers() async {
        let queue = HotplugNoticeQueue()
        let producers = 4, each = 2_000
        let consumer = Task { () -> [Int] in
            var seen: [Int] = []
            while seen.count < producers * each {
                let batch = await queue.next()
                if batch.isEmpty { break }
                seen += batch.notices.map { $0.descriptor.address ?? -1 }
            }
            return seen
        }
        await withTaskGroup(of: Void.self) { group in
            for p in 0..<producers {
                group.addTask { for i in 0..<each { queue.yield(Self.notice(p * 100_000 + i)) } }
            }
        }
        let seen = await consumer.value
        #expect(seen.count == producers * each)
        for p in 0..<producers {
            let mine = seen.filter { $0 / 100_000 == p }
            #expect(mine == Array(p * 100_000..<p * 100_000 + each), "producer \(p)'s notices in order")
        }
    }

    @Test("finish hands over what is queued, then ends; later notices are dropped")
    func finish() async {
        let queue = HotplugNoticeQueue()
        queue.yield(Self.notice(2))
        queue.finish()
        queue.yield(Self.notice(3))
        #expect(await queue.next().notices.map(\.descriptor.address) == [2])
        #expect(await queue.next().isEmpty)
        #expect(await queue.next().isEmpty, "and stays ended")
    }

    @Test("A paced release hands the first batch over at once, holds what comes within the interval and says until when, and leaves a busy consumer alone")
    func pacedRelease() async {
        let queue = HotplugNoticeQueue()
        let t0 = ContinuousClock.now
        let interval = Duration.milliseconds(4)
        #expect(queue.release(pacedBy: interval, at: t0) == nil, "nothing held: nothing to do")
        // Nobody waits: the notices stay for the consumer to take when it comes.
        queue.hold(Self.notice(1))
        #expect(queue.release(pacedBy: interval, at: t0) == nil)
        #expect(await queue.next().notices.map(\.descriptor.address) == [1])
        // A waiting consumer gets the first batch at once.
        let first = Task { await queue.next() }
        #expect(await Self.waitUntilWaiting(queue))
        queue.hold(Self.notice(2))
        #expect(queue.release(pacedBy: interval, at: t0) == nil)
        #expect(await first.value.notices.map(\.descriptor.address) == [2])
        // Within the interval, the next waits, and the queue says until when.
        let second = Task { await queue.next() }
        #expect(await Self.waitUntilWaiting(queue))
        queue.hold(Self.notice(3))
        #expect(queue.release(pacedBy: interval, at: t0 + .milliseconds(1)) == t0 + interval)
        queue.hold(Self.notice(4))
        #expect(queue.release(pacedBy: interval, at: t0 + .milliseconds(3)) == t0 + interval)
        #expect(queue.isConsumerWaiting, "still held back")
        #expect(queue.release(pacedBy: interval, at: t0 + interval) == nil)
        #expect(await second.value.notices.map(\.descriptor.address) == [3, 4], "one batch")
        #expect(queue.noticesReceived == 4)
    }

    @Test("finish wakes a waiting consumer, and cancelling one ends its wait")
    func wakeUps() async {
        // Each wake-up is tested on a consumer known to be waiting (not merely given time to).
        let queue = HotplugNoticeQueue()
        let waiting = Task { await queue.next() }
        #expect(await Self.waitUntilWaiting(queue), "the consumer waits")
        queue.finish()
        #expect(await waiting.value.isEmpty)
        #expect(!queue.isConsumerWaiting)

        let other = HotplugNoticeQueue()
        let cancelled = Task { await other.next() }
        #expect(await Self.waitUntilWaiting(other), "the consumer waits")
        cancelled.cancel()
        #expect(await cancelled.value.isEmpty)
        other.yield(Self.notice(9))
        #expect(await other.next().notices.map(\.descriptor.address) == [9], "the queue itself still works")
    }

    @Test("News comes out in its place among the notices; onPosted counts it before anyone can take it")
    func news() async {
        let counts = Locked((posted: 0, handled: 0))
        let queue = HotplugNoticeQueue(
            onPosted: { counts.withLock { $0.posted += 1 } }, onHandled: { n in counts.withLock { $0.handled += n } })
        let ran = Locked<[Int]>([])
        queue.yield(Self.notice(2))
        #expect(queue.post { ran.withLock { $0.append(1) } })
        queue.yield(Self.notice(3))
        #expect(counts.withLock { $0.posted } == 1, "counted when posted")
        let batch = await queue.next()
        #expect(batch.count == 3)
        let shape = batch.map { item -> String in
            switch item {
            case .notice(let n): "notice \(n.descriptor.address ?? -1)"
            case .news: "news"
            }
        }
        #expect(shape == ["notice 2", "news", "notice 3"])
        for case .news(let work) in batch { await work() }
        #expect(ran.withLock { $0 } == [1])
        queue.finish()
        #expect(await queue.next().isEmpty)
        #expect(counts.withLock { $0.handled } == 3, "the batch of three is handled once the consumer comes back")
        #expect(!queue.post { ran.withLock { $0.append(2) } }, "a finished queue refuses news")
        #expect(counts.withLock { ($0.posted, $0.handled) } == (2, 4), "and what it counted as posted is counted as handled")
        #expect(ran.withLock { $0 } == [1], "refused news never runs")
    }
}

extension [HotplugNoticeQueue.Item] {
    /// The notices of a batch, without its news.
    var notices: [HotplugNotice] {
        compactMap { if case .notice(let n) = $0 { n } else { nil } }
    }
}
