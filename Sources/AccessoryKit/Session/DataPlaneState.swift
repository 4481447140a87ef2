import AccessoryCore
import DequeModule

/// Everything a ``DataPlane``'s lock guards: both state machines, the continuations of the
/// calls waiting on them, and the queue operations they decided and nobody has performed
/// yet. Its methods are the steps an event takes under the lock; what must happen after
/// the lock is released (resuming, performing, telling the owner) they record in
/// ``Effects``. No lock, clock or I/O in here.
struct DataPlaneState {
    typealias ReadContinuation = CheckedContinuation<DataPlane.ReadResult, Never>
    typealias WriteContinuation = CheckedContinuation<DataPlane.WriteResult, Never>

    /// A queue operation a machine decided.
    enum Work {
        case submitIn(count: Int)
        case submitOut(ArraySlice<UInt8>)
        case cancelIn
        case cancelOut
    }

    /// What to do once the lock is released.
    struct Effects {
        var reads: [(ReadContinuation, DataPlane.ReadResult)] = []
        var writes: [(WriteContinuation, DataPlane.WriteResult)] = []
        var drains: [CheckedContinuation<Void, Never>] = []
        var verdicts: [(CheckedContinuation<AccessoryError, Never>, AccessoryError)] = []
        /// This thread is to perform ``DataPlaneState/work``.
        var perform = false
        /// The owner is to be told that the device is (maybe) gone.
        var gone: DeviceGoneSign?
    }

    var input: InputStateMachine
    var output: OutputStateMachine
    var nextID: UInt64 = 0
    var readers: [UInt64: ReadContinuation] = [:]
    /// Results that came before their call had suspended.
    var readResults: [UInt64: DataPlane.ReadResult] = [:]
    var writers: [UInt64: WriteContinuation] = [:]
    var writeResults: [UInt64: DataPlane.WriteResult] = [:]
    /// Queue operations decided and not yet performed, in order.
    var work: Deque<Work> = []
    /// Whether a thread is performing ``work``.
    var performing = false
    var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Waiting in ``DataPlane/deviceGone(_:)`` for the verdict.
    var verdictWaiters: [CheckedContinuation<AccessoryError, Never>] = []
    var failure: AccessoryError?
    var closed = false
    var reportedGone = false

    init(configuration: DataPlane.Configuration) {
        input = InputStateMachine(configuration: configuration.input)
        output = OutputStateMachine(configuration: configuration.output)
    }

    mutating func newID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    /// Whether no transfer is in flight in either direction and no thread is performing
    /// queue operations.
    var isDrained: Bool { input.inFlight == 0 && output.inFlight == 0 && !performing }

    // MARK: Waiting calls

    /// Read `id`'s result if it came already; else `c` waits for it.
    mutating func awaitRead(_ id: UInt64, _ c: ReadContinuation) -> DataPlane.ReadResult? {
        if let r = readResults.removeValue(forKey: id) { return r }
        readers[id] = c
        return nil
    }

    /// Write (or flush) `id`'s result if it came already; else `c` waits for it.
    mutating func awaitWrite(_ id: UInt64, _ c: WriteContinuation) -> DataPlane.WriteResult? {
        if let r = writeResults.removeValue(forKey: id) { return r }
        writers[id] = c
        return nil
    }

    // MARK: Machine actions

    /// Queues the input machine's queue operations and hands its result to the waiting read
    /// (or keeps it for the read that has not suspended yet).
    mutating func absorb(_ a: InputStateMachine.Actions, _ fx: inout Effects) {
        if a.submits > 0 { work.append(.submitIn(count: a.submits)) }
        if a.cancelAll { work.append(.cancelIn) }
        if let (id, result) = a.resumption {
            if let c = readers.removeValue(forKey: id) { fx.reads.append((c, result)) } else { readResults[id] = result }
        }
        if let sign = a.deviceGone { gone(sign, &fx) }
    }

    /// Queues the output machine's queue operations and hands its results to the waiting
    /// writes and flushes (or keeps them for those that have not suspended yet).
    mutating func absorb(_ a: OutputStateMachine.Actions, _ fx: inout Effects) {
        for bytes in a.submits { work.append(.submitOut(bytes)) }
        if a.cancelAll { work.append(.cancelOut) }
        for (id, result) in a.resumptions {
            if let c = writers.removeValue(forKey: id) { fx.writes.append((c, result)) } else { writeResults[id] = result }
        }
        if let sign = a.deviceGone { gone(sign, &fx) }
    }

    /// The device is (maybe) gone: the owner is told once, unless the data plane has ended.
    mutating func gone(_ sign: DeviceGoneSign, _ fx: inout Effects) {
        guard !reportedGone, failure == nil, !closed else { return }
        reportedGone = true
        fx.gone = sign
    }

    /// Ends an event: the first thread to find work pending performs it, and drain waiters
    /// are released once nothing is in flight or being performed.
    mutating func finalize(_ fx: inout Effects) {
        if !performing, !work.isEmpty {
            performing = true
            fx.perform = true
        }
        if isDrained, !drainWaiters.isEmpty {
            fx.drains = drainWaiters
            drainWaiters.removeAll()
        }
    }

    // MARK: Performing

    /// The next queue operation for the performing thread; when none is left, the thread
    /// stops performing and gets the drain waiters to release.
    mutating func nextWork() -> (Work?, [CheckedContinuation<Void, Never>]) {
        if let w = work.popFirst() { return (w, []) }
        performing = false
        var fx = Effects()
        finalize(&fx)
        return (nil, fx.drains)
    }

    /// `count` IN transfers were not submitted (the first failed with `error`): neither are
    /// the IN submits still queued.
    mutating func inputSubmitFailed(count: Int, _ error: AccessoryError, _ fx: inout Effects) {
        var dropped = 0
        work.removeAll { if case .submitIn(let n) = $0 { dropped += n; return true } else { return false } }
        absorb(input.submitFailed(count: count + dropped, error), &fx)
    }

    /// An OUT transfer failed to be submitted with `error`: neither are the OUT submits still
    /// queued.
    mutating func outputSubmitFailed(_ error: AccessoryError, _ fx: inout Effects) {
        var dropped = 0
        work.removeAll { if case .submitOut = $0 { dropped += 1; return true } else { return false } }
        absorb(output.submitFailed(count: 1 + dropped, error), &fx)
    }
}
