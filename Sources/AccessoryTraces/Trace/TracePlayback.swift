import AccessoryCore
/// Plays a trace back through an `AccessoryTracker`, with no I/O and no clock (what
/// `accessoryctl replay` prints; AccessoryTesting's `TraceReplay` plays one through a whole
/// manager on simulated USB instead). The records are the tracker's inputs, so the
/// decisions are the manager's own, applied as <doc:TraceFormat>'s replay semantics say: in
/// file order, each at its time `t`, every snapshot is reconciled as authoritative, and once the trace ends the registry
/// is reconciled against the last snapshot if events came after it.
///
/// It streams: only the registry and the last snapshot are kept, so memory does not grow
/// with the length of the trace.
///
/// ```swift
/// var playback = TracePlayback()
/// var reader = try TraceReader(path: "overnight.jsonl")
/// try playback.replay(&reader) { print($0) }
/// print(playback.registry.accessories)
/// ```
public struct TracePlayback: Sendable {
    /// The tracker the trace's records are the inputs of.
    package private(set) var tracker: AccessoryTracker
    /// The registry the trace is replayed into.
    public var registry: ConnectionRegistry { tracker.registry }
    /// The time of the last record that had one.
    private var time: Duration = .zero
    /// The effects of the record being applied, kept between records for their capacity.
    private var effects = TrackerEffects()
    /// The devices of the last snapshot applied, if there was one.
    package private(set) var lastSnapshot: [AccessoryDescriptor]?
    /// How many records have been applied.
    package private(set) var recordCount = 0
    /// Whether events came after the last snapshot (so ``finish()`` has work to do).
    private var changedSinceSnapshot = false

    /// A playback that starts from `registry` (empty by default).
    public init(registry: ConnectionRegistry = ConnectionRegistry()) {
        tracker = AccessoryTracker(registry: registry, at: .zero)
        tracker.recordsNotices = false  // nothing here keeps a recording
        tracker.looksAreAuthoritative = true  // every look is a snapshot
    }

    /// Applies one record and returns the notifications it caused, in delivery order.
    /// The record's `t` is the time of the tracker's input, for re-enumeration links.
    public mutating func apply(_ record: TraceRecord) -> [AccessoryEvent] {
        if let time = record.time { self.time = time }
        return apply(record.event)
    }

    /// Applies one event and returns the notifications it caused, in delivery order.
    package mutating func apply(_ event: HotplugEvent) -> [AccessoryEvent] {
        var events: [AccessoryEvent] = []
        apply(event, into: &events)
        return events
    }

    /// Applies one record, appending the notifications it caused to `events` in delivery
    /// order: a replay of millions of records reuses one array.
    package mutating func apply(_ record: consuming TraceRecord, into events: inout [AccessoryEvent]) {
        if let time = record.time { self.time = time }
        var event = HotplugEvent.sleep
        swap(&event, &record.event)  // moved out of the record, not copied (and the copy released)
        apply(event, into: &events)
    }

    /// Applies one event, appending the notifications it caused to `events`.
    package mutating func apply(_ event: consuming HotplugEvent, into
 events: inout [AccessoryEvent]) {
        recordCount += 1
        if case .snapshot(let devices) = event {
            lastSnapshot = devices
            changedSinceSnapshot = false
        } else if lastSnapshot != nil {
            changedSinceSnapshot = true
        }
        tracker.apply(event, at: time, into: &effects)
        if events.isEmpty {
            // The usual case: hand the array over instead of copying every event into `events`
            // (the two swap buffers, each keeping its capacity).
            swap(&events, &effects.events)
        } else {
            events.append(contentsOf: effects.events)
        }
        effects.events.empty()
        effects.recorded.empty()
        effects.notes.empty()
    }

    /// Ends the trace: if events came after the last snapshot, reconciles the registry
    /// against it, so the registry equals the last snapshot. Returns what that reconcile did.
    public mutating func finish() -> [AccessoryEvent] {
        guard changedSinceSnapshot, let truth = lastSnapshot else { return [] }
        changedSinceSnapshot = false
        return tracker.snapshot(truth.map { USBDeviceInfo(descriptor: $0) }, at: time).events
    }

    /// Applies every remaining record of `reader`, then ``finish()``es, handing each
    /// notification to `notify` in delivery order.
    /// - Throws: the reader's ``TraceError``, or what `notify` throws.
    public mutating func replay(_ reader: inout TraceReader, notify: (AccessoryEvent) throws -> Void) throws {
        var events: [AccessoryEvent] = []
        while let record = try reader.next() {
            apply(record, into: &events)
            for event in events { try notify(event) }
            events.removeAll(keepingCapacity: true)
        }
        for event in finish() { try notify(event) }
    }

    /// Applies every record of `records`, then ``finish()``es, handing each notification to
    /// `notify` in delivery order.
    package mutating func replay(
        _ records: some Sequence<TraceRecord>, notify: (AccessoryEvent) throws -> Void
    ) rethrows {
        for record in records {
            for event in apply(record) { try notify(event) }
        }
        for event in finish() { try notify(event) }
    }
}

/// The former name of ``TracePlayback``, too like AccessoryTesting's `TraceReplay`.
@available(*, deprecated, renamed: "TracePlayback")
public typealias TraceReplayer = TracePlayback

extension Array {
    /// Empties the array, keeping its capacity. A replayed record leaves one element or none,
    /// and `removeLast()` is cheaper than `removeAll(keepingCapacity:)`'s general replacement.
    @inline(__always)
    package mutating func empty() {
        if count == 1 {
            removeLast()
        } else if !isEmpty {
            removeAll(keepingCapacity: true)
        }
    }
}
