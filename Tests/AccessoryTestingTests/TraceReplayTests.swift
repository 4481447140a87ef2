import AccessoryCore
import AccessoryTraces
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import Foundation
import Testing

/// `TraceReplay` through the real manager on a simulation must say what
/// `accessoryctl replay --json` says: the same notifications, IDs, order and reasons.
@Suite("TraceReplay equals the replay")
struct TraceReplayTests {
    /// The notification lines of `accessoryctl replay --json` for these records: the
    /// command's own code path (TracePlayback and ReplayOutput), without the final line.
    static func replayLines(_ records: [TraceRecord]) -> [String] {
        var replayer = TracePlayback()
        var output = ReplayOutput()
        replayer.replay(records) { output.append($0) }
        return lines(output)
    }

    static func lines(_ events: [AccessoryEvent]) -> [String] {
        var output = ReplayOutput()
        for event in events { output.append(event) }
        return lines(output)
    }

    private static func lines(_ output: ReplayOutput) -> [String] {
        output.string.split(separator: "\n").map(String.init)
    }

    static func generated(seed: UInt64, events: Int, faults: FaultInjector.Configuration) -> [TraceRecord] {
        var records: [TraceRecord] = []
        var injector = FaultInjector(faults, seed: seed)
        let generator = TraceGenerator(.init(
            seed: seed, events: events, devices: 6, buses: 2, snapshotInterval: 25,
            sleepProbability: 0.01, overflowProbability: 0.01))
        for record in generator { injector.push(record) { records.append($0) } }
        injector.finish { records.append($0) }
        return records
    }

    @Test("The eight-hours fixture: the same lines as accessoryctl replay --json")
    func eightHours() async throws {
        let path = Fixtures.path("eight-hours-asleep.jsonl")
        let replay = try TraceReplay(path: path)
        let events = try await replay.events()
        #expect(Self.lines(events) == Self.replayLines(replay.records))
        #expect(events.count == 9)
        #expect(events.filter { if case .disconnected(_, .ghostEvicted) = $0 { true } else { false } }.count == 3)
    }

    @Test("1,000 seeded traces with faults (100 in the quick run): the same lines as the replay, entry for entry")
    func seededFaultTraces() async throws {
        var compared = 0, notifications = 0, ghosts = 0
        let traces = TestScale.count(1000)
        for seed in UInt64(1)...UInt64(traces) {
            let faults = FaultInjector.Configuration(
                drop: Double(seed % 4) * 0.05, duplicate: Double(seed % 3) * 0.05, reorder: Double(seed % 5) * 0.04,
                delay: Double(seed % 2) * 0.05)
            let records = Self.generated(seed: seed, events: 60 + Int(seed % 80), faults: faults)
            var text = ""
            var writer = TraceWriter(sink: ByteBufferSink(), flushesEachRecord: false)
            for r in records { try writer.write(r) }
            try writer.flush()
            text = String(decoding: writer.sink.bytes, as: UTF8.self)
            let replay = try TraceReplay(contents: text, name: "seed-\(seed)")
            let got = Self.lines(try await replay.events())
            let want = Self.replayLines(replay.records)
            #expect(got == want, "seed \(seed): first difference at \(Array(zip(got, want)).firstIndex { $0.0 != $0.1 } ?? min(got.count, want.count))")
            if got != want { break }
            compared += 1
            notifications += got.count
            ghosts += got.filter { $0.contains(#""reason":"ghost-evicted""#) }.count
        }
        #expect(compared == traces)
        print("compared \(compared) traces: \(notifications) notifications, \(ghosts) ghost evictions")
        #expect(notifications > traces * 10 && ghosts > traces / 10, "the traces exercise evictions: \(notifications) notifications, \(ghosts) ghosts")
    }

    @Test("Stepping: play to a time, look at the manager, go on; the end is the same as playing it whole")
    func stepping() async throws {
        let replay = try TraceReplay(path: Fixtures.path("eight-hours-asleep.jsonl"))
        let whole = try await replay.events()
        let (before, after) = try await replay.play { player in
            try await player.play(until: 60)
            let first = await player.events
            #expect(await player.manager.connectedAccessories.map(\.connectionID.rawValue) == [1])
            try await player.finish()
            return (first, await player.events)
        }
        #expect(before.count == 1)
        #expect(after == whole)
    }

    @Test("A malformed trace is an error with the file, the line and the reason")
    func malformed() throws {
        let error = try #require(throws: TraceError.self) {
            try TraceReplay(contents: "{\"t\":0,\"event\":\"add\",\"bus\":1,\"port\":\"1-1\"}\n{\"t\":1,\"event\":\"remove\"}\n", name: "mine.jsonl")
        }
        #expect(error.file == "mine.jsonl" && error.line == 2)
        #expect(error.description.hasPrefix("mine.jsonl:2:"))
    }
}
