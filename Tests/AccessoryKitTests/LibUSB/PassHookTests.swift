import Synchronization
import Testing
@testable import AccessoryKit

/// The event thread's after-each-pass hook runs millions of times in a long-lived process.
@Suite("PassHook")
struct PassHookTests {
    @Test("The hook's work runs at the same stack depth on its thousandth run as on its first")
    func flat() {
        // A bare closure in a Mutex gained two reabstraction thunks per read: each run then
        // went two frames deeper than the last (and cost more).
        let hook = PassHook()
        let depths = Mutex<[Int]>([])
        hook.add {
            var local = 0
            withUnsafeMutablePointer(to: &local) { p in depths.withLock { $0.append(Int(bitPattern: p)) } }
            return nil
        }
        for _ in 0..<1_000 { _ = hook.run() }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 1_000)
        #expect(Set(seen).count == 1, "the work ran \(seen.first.flatMap { f in seen.last.map { f - $0 } } ?? 0) bytes deeper by the end")
    }

    @Test("A hook with nothing added runs nothing; works run in the order added, every pass; the earliest time one asks to run again is the pass's")
    func order() {
        let hook = PassHook()
        #expect(hook.run() == nil)
        let runs = Mutex<[String]>([])
        let t0 = ContinuousClock.now
        hook.add {
            runs.withLock { $0.append("a") }
            return t0 + .milliseconds(5)
        }
        #expect(hook.run() == t0 + .milliseconds(5))
        hook.add {
            runs.withLock { $0.append("b") }
            return t0 + .milliseconds(2)
        }
        hook.add {
            runs.withLock { $0.append("c") }
            return nil
        }
        #expect(hook.run() == t0 + .milliseconds(2))
        #expect(runs.withLock { $0 } == ["a", "a", "b", "c"])
    }

    @Test(
        "The event thread's next wait for events ends when a hook must run again: a batch held for 3 ms waits 3 ms, not the 500 ms poll",
        arguments: [
            (nil, 500_000), (3_000, 3_000), (0, 0), (-7_000, 0), (499_999, 499_999), (500_000, 500_000), (2_000_000, 500_000),
        ] as [(Int?, Int)])
    func waitEndsByTheDeadline(dueInMicroseconds: Int?, waits: Int) {
        let now = ContinuousClock.now
        let timeout = LibUSBEventThread.waitForEvents(until: dueInMicroseconds.map { now + .microseconds($0) }, now: now)
        #expect(Int(timeout.tv_sec) * 1_000_000 + Int(timeout.tv_usec) == waits)
    }
}
