extension AccessorySession {
    /// The accessory's data, as chunks in the order it sent them: each chunk is what one
    /// bulk IN transfer received. An empty chunk is a zero-length packet (a message boundary
    /// for protocols that use one).
    ///
    /// The sequence finishes when the session closes, and throws ``AccessoryError`` when a
    /// read fails:
    /// - `.accessoryDisconnected(reason)` when the accessory went away (final);
    /// - `.timeout` (see ``Options/readTimeout``), `.cancelled` when the reading task was
    ///   cancelled, `.stall` until ``AccessorySession/clearHalt()``: nothing is lost, and
    ///   iterating ``AccessorySession/input`` again goes on where it stopped;
    /// - `.busy` when another task is reading at the same time, or a `transferIn` call is in
    ///   flight on the stream's endpoint.
    ///
    /// One task should read at a time; iterators share the session's buffer.
    public struct Input: AsyncSequence, Sendable {
        let session: AccessorySession

        public func makeAsyncIterator() -> Iterator { Iterator(session: session) }

        /// Reads chunks with ``AccessorySession/read()``.
        public struct Iterator: AsyncIteratorProtocol {
            let session: AccessorySession

            public mutating func next() async throws(AccessoryError) -> [UInt8]? {
                try await session.read()
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async throws(AccessoryError) -> [UInt8]? {
                try await session.read()
            }
        }
    }
}
