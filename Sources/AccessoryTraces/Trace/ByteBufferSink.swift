import AccessoryCore
/// A sink that collects bytes in memory, for tests and for building output in one piece.
package struct ByteBufferSink: TraceSink, Sendable {
    package var bytes: [UInt8] = []

    package init() {}

    package mutating func write(_ bytes: UnsafeRawBufferPointer) {
        self.bytes.append(contentsOf: bytes)
    }

    /// The bytes as UTF-8 text.
    package var string: String { String(decoding: bytes, as: UTF8.self) }
}
