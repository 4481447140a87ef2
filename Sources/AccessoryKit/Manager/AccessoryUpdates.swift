import AccessoryCore

/// One element of ``AccessoryManager/updates(includingCurrent:bufferLimit:)``: a
/// notification, or the mark that the subscriber fell behind and what it missed was
/// collapsed.
public enum AccessoryUpdate: Sendable, Hashable {
    /// A notification.
    case event(AccessoryEvent)
    /// More than the buffer limit waited unread: `missed` notifications were dropped, and
    /// the events that follow are the difference between what the subscriber had seen and
    /// the accessories connected now (`.disconnected` with its real reason for each that
    /// left, then `.connected` for each that is new, in ID order).
    case resynchronized(missed: Int)
}

/// A bounded stream of ``AccessoryUpdate``s for one subscriber. The manager never waits
/// for it: when more than `bufferLimit` notifications wait unread, they collapse into a
/// ``AccessoryUpdate/resynchronized(missed:)`` mark and the difference from the current
/// state. The stream's promise still holds: one `.connected` per ID before at most one
/// `.disconnected`, which carries the real reason, and never a disconnect of an ID the
/// subscriber was not told of (or, without `includingCurrent`, taken to know).
///
/// Each iterator reads the whole stream, with its own limit: the first from when
/// ``AccessoryManager/updates(includingCurrent:bufferLimit:)`` returned, a later one from
/// when it is made (first, with `includingCurrent`, a `.connected` for each accessory
/// connected then). Cancelling a task that waits in `next()` ends that iterator. The
/// subscription ends when this sequence and all its iterators are gone, or at shutdown.
public struct AccessoryUpdates: AsyncSequence, Sendable {
    let buffer: UpdateBuffer
    let registration: SubscriberFanOut.Registration

    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: Reader(buffer: buffer, id: buffer.addReader(), registration: registration))
    }

    /// How many updates wait unread now (for the iterator furthest behind).
    package var bufferedCount: Int { buffer.bufferedCount }

    /// One reader of the stream, with its own place in it.
    public struct Iterator: AsyncIteratorProtocol {

        let reader: Reader
        public mutating func next() async -> AccessoryUpdate? { await reader.buffer.next(reader.id) }
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> AccessoryUpdate? {
            await reader.buffer.next(reader.id)
        }
    }

    /// One iterator's reader: removed from the buffer when the iterator (and its copies) go.
    final class Reader: Sendable {
        let buffer: UpdateBuffer
        let id: UInt64
        /// Keeps the subscription while the iterator lives.
        let registration: SubscriberFanOut.Registration

        init(buffer: UpdateBuffer, id: UInt64, registration: SubscriberFanOut.Registration) {
            self.buffer = buffer
            self.id = id
            self.registration = registration
        }

        deinit { buffer.removeReader(id) }
    }
}
