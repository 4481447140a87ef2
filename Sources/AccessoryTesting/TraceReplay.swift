import AccessoryCore
import AccessoryTraces
import AccessoryKit
import Synchronization
import AccessoryLocking

/// A recorded hotplug trace, played through a real `AccessoryManager` on a
/// ``SimulatedUSB``: the trace's `add` and `remove` records are hotplug notices, its
/// `snapshot` records are the OS truth at that moment (the manager reconciles at each), and
/// its `sleep`, `wake` and `overflow` records reach the registry as they do in a replay. Once
/// the records end, the manager reconciles with the last snapshot, if events came after it.
///
/// The virtual clock stands still while a trace plays, so no debounced or periodic reconcile
/// runs between records: a trace carries no OS truth between its snapshots. The result is
/// what `accessoryctl replay TRACE --json` prints, notification for notification.
public struct TraceReplay: Sendable {
    /// The trace's records, in file order.
    public let records: [TraceRecord]
    /// Problems that were tolerated while reading, such as a truncated last line.
    public let warnings: [TraceWarning]

    /// Reads a trace file.
    /// - Throws: `TraceError` naming the file, the line and the reason.
    public init(path: String) throws(TraceError) {
        let contents = try TraceReader.readAll(path: path)
        records = contents.records
        warnings = contents.warnings
    }

    /// Reads a trace from text, for traces a test writes inline.
    public init(contents: String, name: String = "<memory>") throws(TraceError) {
        let read = try TraceReader.readAll(string: contents, name: name)
        records = read.records
        warnings = read.warnings
    }

    /// Plays the whole trace and returns everything an `events()` subscriber saw, in order,
    /// without the disconnects of the final shutdown.
    public func events(configuration: AccessoryManager.Configuration = .init()) async throws -> [AccessoryEvent] {
        try await play(configuration: configuration) { player in
            try await player.finish()
            return await player.events
        }
    }

    /// Plays the trace step by step under `body`'s control: ``Player/step()``,
    /// ``Player/play(until:)`` and ``Player/play(throughLine:)`` move it on, and between
    /// them the test asserts on ``Player/events``, on ``Player/manager`` or on its own code
    /// using the manager. The manager shuts down when `body` returns.
    public func play<R: Sendable>(
        configuration: AccessoryManager.Configuration = .init(),
        _ body: (Player) async throws -> R
    ) async throws -> R {
        let usb = SimulatedUSB()
        let manager = try await AccessoryManager(configuration: configuration, usb: usb)
        let player = Player(records: records, usb: usb, manager: manager)
        manager.fanOut.observe { [weak player] event in player?.record(event) }
        do {
            let result = try await body(player)
            await manager.shutdown()
            return result
        } catch {
            await manager.shutdown()
            throw error
        }
    }

    /// A trace being played: where it is, what the manager has said so far.
    public actor Player {
        /// The manager the trace plays through.
        public nonisolated let manager: AccessoryManager
        /// The simulation behind it.
        public nonisolated let usb: SimulatedUSB
        /// The records not played yet start at this index.
        public private(set) var position = 0
        let records: [TraceRecord]
        nonisolated let log = Locked<[AccessoryEvent]>([])
        private var lastSnapshot: [AccessoryDescriptor]?
        private var changedSinceSnapshot = false
        private var finished = false

        init(records: [TraceRecord], usb: SimulatedUSB, manager: AccessoryManager) {
            self.records = records
            self.usb = usb
            self.manager = manager
        }

        nonisolated func record(_ event: AccessoryEvent) {
            log.withLock { $0.append(event) }
        }

        /// The notifications so far, in order (shutdown disconnects are never included).
        public var events: [AccessoryEvent] {
            log.withLock { $0 }.filter { if case .disconnected(_, .shutdown) = $0 { false } else { true } }
        }

        /// Whether every record has been played.
        public var isAtEnd: Bool { position == records.count }

        /// Plays the next record and returns it; `nil` at the end.
        @discardableResult
        public func step() async throws -> TraceRecord? {
            guard position < records.count else { return nil }
            let record = records[position]
            position += 1
            switch record.event {
            case .added(let d):
                await usb.replayArrival(d, at: record.time)
            case .removed(let r):
                await usb.replayRemoval(r, at: record.time)
            case .snapshot(let devices):
                await usb.replaySystem(record.event, at: record.time)
                lastSnapshot = devices
            case .sleep, .wake, .overflow:
                await usb.replaySystem(record.event, at: record.time)
            }
            if case .snapshot = record.event { changedSinceSnapshot = false } else if lastSnapshot != nil { changedSinceSnapshot = true }
            return record
        }

        /// Plays every record whose time `t` is at most `time`.
        public func play(until time: Double) async throws {
            while position < records.count, records[position].t <= time { try await step() }
        }

        /// Plays every record up to and including the one on `line` of the trace file.
        public func play(throughLine line: Int) async throws {
            while position < records.count, records[position].line <= line { try await step() }
        }

        /// Plays the rest, then reconciles with the last snapshot if events came after it, as
        /// a replay ends. Idempotent.
        public func finish() async throws {
            while try await step() != nil {}
            guard !finished else { return }
            finished = true
            if changedSinceSnapshot, let last = lastSnapshot {
                await usb.replaySystem(.snapshot(last), at: nil)
            }
        }
    }
}
