import AccessoryCore
import AccessoryLocking

/// The subscribers of ``AccessoryManager/recoveries()``: each gets every report, unbounded
/// (reports are rare); a stream that ends is forgotten.
package final class RecoveryWatchers: Sendable {
    private let streams = Locked<[UInt64: AsyncStream<RecoveryReport>.Continuation]>([:])
    private let nextID = Locked<UInt64>(0)

    package init() {}

    /// A new subscriber's stream.
    package func subscribe() -> AsyncStream<RecoveryReport> {
        let (stream, continuation) = AsyncStream<RecoveryReport>.makeStream()
        let id = nextID.withLock { n in
            n += 1
            return n
        }
        streams.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.streams.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    /// Sends `report` to every subscriber.
    package func send(_ report: RecoveryReport) {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(report) }
    }

    /// Ends every stream (at shutdown).
    package func finish() {
        for continuation in streams.withLock({ s in
            defer { s = [:] }
            return Array(s.values)
        }) { continuation.finish() }
    }
}
