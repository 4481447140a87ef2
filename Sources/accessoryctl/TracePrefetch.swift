import AccessoryLocking
import AccessoryTraces
import Dispatch
import Glibc
import Synchronization

/// A trace's records, read and decoded on a thread of their own, at most two batches ahead
/// of the caller: with two processors or more, `replay` decodes the next records while it
/// plays these. With one, the caller reads them itself.
///
/// It hands out what the reader would, in the same order: the records, then the reader's
/// error after the records before it, or the end and the reader's warnings.
struct TracePrefetch: ~Copyable {
    /// What the reader gave: records, then maybe how it ended.
    private struct Batch: Sendable {
        var records: [TraceRecord] = []
        /// The reader's error, after `records`.
        var failure: TraceError?
        /// The reader's warnings, once the trace has ended after `records`.
        var warnings: [TraceWarning]?
    }

    /// Batches between the reading thread and the caller.
    private final class Channel: Sendable {
        private let batches = Locked(Queue())
        /// Signalled for each batch put in.
        private let filled = DispatchSemaphore(value: 0)
        /// Room for batches not yet taken.
        private let room: DispatchSemaphore

        private struct Queue: Sendable {
            var batches: [Batch] = []
            var isStopped = false
        }

        init(depth: Int) { room = DispatchSemaphore(value: depth) }

        /// Waits for room, then puts `batch` in; `false` once the caller has stopped.
        func put(_ batch: Batch) -> Bool {
            room.wait()
            let put = batches.withLock { queue in
                if !queue.isStopped { queue.batches.append(batch) }
                return !queue.isStopped
            }
            if put { filled.signal() }
            return put
        }

        /// Waits for the next batch and takes it.
        func take() -> Batch {
            filled.wait()
            let batch = batches.withLock { $0.batches.removeFirst() }
            room.signal()
            return batch
        }

        /// No more batches are taken: a reading thread waiting for room ends.
        func stop() {
            batches.withLock { $0.isStopped = true }
            room.signal()
        }
    }

    /// The reading thread's batches; `nil` when the caller reads ``inline``.
    private let channel: Channel?
    /// The reader, when the caller reads it itself.
    private var inline: TraceReader?
    private let batchSize: Int
    private var batch = Batch()
    private var position = 0
    /// The reader's warnings, once ``next()`` has returned `nil`.
    private(set) var warnings: [TraceWarning] = []

    /// Starts reading `reader` on a new thread, `batchSize` records at a time, when `threaded`
    /// (by default, when the process may run on more than one processor).
    init(_ reader: consuming TraceReader, batchSize: Int = 1024, threaded: Bool = TracePrefetch.processors() > 1) {
        self.batchSize = batchSize
        guard threaded else {
            channel = nil
            inline = consume reader
            return
        }
        let channel = Channel(depth: 2)
        self.channel = channel
        let handover = Mutex<TraceReader?>(consume reader)
        DetachedThread.start {
            guard var reader = handover.withLock({ $0.take() }) else { return }
            while true {
                let batch = Self.read(&reader, batchSize)
                let ends = batch.failure != nil || batch.warnings != nil
                guard channel.put(batch), !ends else { return }
            }
        }
    }

    /// Up to `count` records of `reader`, and how it ended if it did.
    private static func read(_ reader: inout TraceReader, _ count: Int) -> Batch {
        var batch = Batch()
        batch.records.reserveCapacity(count)
        do throws(TraceError) {
            while batch.records.count < count, let record = try reader.next() { batch.records.append(record) }
            if batch.records.count < count { batch.warnings = reader.warnings }
        } catch {
            batch.failure = error
        }
        return batch
    }

    deinit { channel?.stop() }

    /// How many processors this process may run on (its affinity mask: `taskset -c 0` makes it
    /// one); 1 if that cannot be read.
    static func processors() -> Int {
        // Glibc's module leaves out sched_getaffinity (_GNU_SOURCE): the kernel's own account,
        // "Cpus_allowed:\t<hex mask>", is read instead.
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 1 }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
        guard n > 0 else { return 1 }
        let status = String(decoding: bytes[..<n], as: UTF8.self)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else { return 1 }
        let count = line.dropFirst("Cpus_allowed:".count).reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount }
        return max(count, 1)
    }

    /// The next record, or `nil` at the end of the trace.
    /// - Throws: the reader's error, once the records before it have been handed out.
    mutating func next() throws(TraceError) -> TraceRecord? {
        while position == batch.records.count {
            if let failure = batch.failure { throw failure }
            if let warnings = batch.warnings {
                self.warnings = warnings
                return nil
            }
            if let channel {
                batch = channel.take()
            } else if var reader = inline.take() {
                batch = Self.read(&reader, batchSize)
                inline = consume reader
            } else {
                return nil
            }
            position = 0
        }
        var record = TraceRecord(t: 0, event: .sleep)
        swap(&record, &batch.records[position])  // moved out, not copied
        position += 1
        return record
    }
}
