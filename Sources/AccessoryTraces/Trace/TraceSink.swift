import AccessoryCore
/// Where ``TraceWriter`` and ``ReplayOutput`` send their bytes.
public protocol TraceSink {
    /// Writes all of `bytes`, or throws.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Pushes anything buffered to its destination.
    mutating func flush() throws
}

extension TraceSink {
    public mutating func flush() throws {}
}
