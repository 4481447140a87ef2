import AccessoryCore
/// A sink that collects bytes in memory, for tests and for building output in one piece.
public struct ByteBufferSink: TraceSink, Sendable {
    public var bytes: [UInt8] = []

    public init() {}

    public mutating func write(_ bytes: UnsafeRawBufferPointer) {
        self.bytes.append(contentsOf: bytes)
    }

    /// The bytes as UTF-8 text.
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
