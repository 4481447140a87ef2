import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Fault injector")
struct FaultInjectorTests {
    private let trace = Array(TraceGenerator(.init(
        seed: 11, events: 5000, devices: 16, buses: 2, snapshotInterval: 300,
        sleepProbability: 0.01, overflowProbability: 0.01)))
    private let all = FaultInjector.Configuration(drop: 0.1, duplicate: 0.1, reorder: 0.1, delay: 0.1)

    @Test("Parses drop=P,dup=P,reorder=P,delay=P and wrap")
    func parsing() throws {
        #expect(try FaultInjector.Configuration(parsing: "drop=0.1,dup=0.05, reorder=0.2 ,delay=1,wrap")
            == .init(drop: 0.1, duplicate: 0.05, reorder: 0.2, delay: 1, wrapAddresses: true))
        #expect(try FaultInjector.Configuration(parsing: "") == .init())
        #expect(try FaultInjector.Configuration(parsing: "duplicate=0.5,wrap=false") == .init(duplicate: 0.5))
        let c = FaultInjector.Configuration(drop: 0.25, wrapAddresses: true)
        #expect(try FaultInjector.Configuration(parsing: c.description) == c)
    }

    @Test("Bad specs are rejected with a clear reason", arguments: [
        ("drop", "'drop' needs a probability, as in drop=0.1"),
        ("drop=2", "probability for 'drop' must be a number from 0 to 1, got '2'"),
        ("dup=x", "probability for 'dup' must be a number from 0 to 1, got 'x'"),
        ("reorder=-0.1", "probability for 'reorder' must be a number from 0 to 1, got '-0.1'"),
        ("lose=0.1", "unknown fault 'lose' (expected drop, dup, reorder, delay or wrap)"),
        ("drop=0.1,,dup=0.1", "empty entry between commas"),
        ("drop=0.1,drop=0.2", "'drop' is given twice"),
        ("wrap=maybe", "'wrap' takes no value or true/false, got 'maybe'"),
    ])
    func badSpecs(spec: String, reason: String) {
        #expect(throws: FaultInjector.SpecError(spec: spec, reason: reason)) {
            try FaultInjector.Configuration(parsing: spec)
        }
        #expect(FaultInjector.SpecError(spec: spec, reason: reason).description == "invalid fault spec \"\(spec)\": \(reason)")
    }

    @Test("The same seed gives the same output; another seed another")
    func determinism() {
        let a = FaultInjector.inject(all, seed: 1, into: trace)
        #expect(a == FaultInjector.inject(all, seed: 1, into: trace))
        #expect(a != FaultInjector.inject(all, seed: 2, into: trace))
        #expect(a != trace)
        #expect(FaultInjector.inject(.init(), seed: 1, into: trace) == trace, "no faults, no change")
    }

    /// The records between snapshots, as multisets of events.
    private func segments(_ records: [TraceRecord]) -> (snapshots: [TraceRecord], segments: [[HotplugEvent: Int]]) {
        var snapshots: [TraceRecord] = []
        var segments: [[HotplugEvent: Int]] = [[:]]
        for r in records {
            if case .snapshot = r.event {
                snapshots.append(r)
                segments.append([:])
            } else {
                segments[segments.count - 1][r.event, default: 0] += 1
            }
        }
        return (snapshots, segments)
    }

    @Test("Snapshots are never dropped, moved or changed, and no event crosses one",
          arguments: Array(1...6) as [UInt64])
    func snapshotsUntouched(seed: UInt64) {
        let heavy = FaultInjector.Configuration(drop: 0.3, duplicate: 0.3, reorder: 0.3, delay: 0.3)
        let out = FaultInjector.inject(heavy, seed: seed, into: trace)
        let before = segments(trace)
        let after = segments(out)
        #expect(after.snapshots.map(\.event) == before.snapshots.map(\.event))
        #expect(after.snapshots.map(\.line) == before.snapshots.map(\.line))
        #expect(after.segments.count == before.segments.count)
        for (b, a) in zip(before.segments, after.segments) {
            for (event, n) in a {
                let limit = (b[event] ?? 0) * 2
                #expect(n <= limit, "an event appears only in its own segment, at most duplicated")
            }
            for (event, n) in b {
                switch event {
                case .sleep, .wake, .overflow: #expect(a[event] == n, "markers are kept")
                default: break
                }
            }
        }
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.t <= $1.t }, "t never decreases")
        #expect(out != trace)
    }

    @Test("Each fault does what it says")
    func eachFault() {
        let adds = trace.filter { if case .added = $0.event { true } else { false } }.count
        let removes = trace.filter { if case .removed = $0.event { true } else { false } }.count
        let dropped = FaultInjector.inject(.init(drop: 1), seed: 1, into: trace)
        #expect(dropped.count == trace.count - adds - removes)
        let doubled = FaultInjector.inject(.init(duplicate: 1), seed: 1, into: trace)
        #expect(doubled.count == trace.count + adds + removes)

        let a = TraceRecord(t: 1, event: .added(TraceTestSupport.descriptor(5)), line: 1)
        let b = TraceRecord(t: 2, event: .sleep, line: 2)
        let c = TraceRecord(t: 3, event: .wake, line: 3)
        let s = TraceRecord(t: 4, event: .snapshot([]), line: 4)
        let swapped = FaultInjector.inject(.init(reorder: 1), seed: 1, into: [a, b, c, s])
        #expect(swapped.map(\.line) == [2, 1, 3, 4])
        #expect(swapped.map(\.t) == [2, 2, 3, 4], "a moved record takes the time before it")
        let delayed = FaultInjector.inject(.init(delay: 1), seed: 1, into: [a, b, s, c])
        #expect(delayed.map(\.line) == [2, 1, 4, 3], "a delay never crosses a snapshot")
    }

    @Test("Address wrap renumbers 2…127 so that allocation wraps early, in events and snapshots alike")
    func wrap() {
        #expect(FaultInjector.wrap(2) == 122)
        #expect(FaultInjector.wrap(7) == 127)
        #expect(FaultInjector.wrap(8) == 2)
        #expect(FaultInjector.wrap(1) == 1)
        #expect(Set((2...127).map(FaultInjector.wrap)) == Set(2...127))
        let out = FaultInjector.inject(.init(wrapAddresses: true), seed: 1, into: trace)
        #expect(out.count == trace.count)
        for (before, after) in zip(trace, out) {
            switch (before.event, after.event) {
            case (.added(let x), .added(let y)): #expect(y.address == x.address.map(FaultInjector.wrap))
            case (.removed(let x), .removed(let y)): #expect(y.address == x.address.map(FaultInjector.wrap))
            case (.snapshot(let x), .snapshot(let y)): #expect(y.map(\.address) == x.map { $0.address.map(FaultInjector.wrap) })
            default: #expect(before.event == after.event)
            }
        }
    }

    @Test("Streaming: records come out with at most a few held back")
    func streaming() {
        // Without drops or duplicates, what has gone in but not out is exactly what is held back.
        var injector = FaultInjector(.init(reorder: 0.3, delay: 0.3), seed: 3)
        var pushed = 0
        var emitted = 0
        var maxBehind = 0
        for r in trace {
            pushed += 1
            injector.push(r) { _ in emitted += 1 }
            maxBehind = max(maxBehind, pushed - emitted)
        }
        injector.finish { _ in emitted += 1 }
        #expect(emitted == pushed)
        #expect(maxBehind <= 5)
    }
}
