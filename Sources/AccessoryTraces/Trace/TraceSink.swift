import AccessoryCore
/// Where a ``TraceWriter`` sends its bytes: ``FileDescriptorSink``, or a type of your own.
public protocol TraceSink {
    /// Writes all of `bytes`, or throws.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Pushes anything buffered to its destination.
    mutating func flush() throws
}

extension TraceSink {
    /// Does nothing: a sink that does not buffer has nothing to push.
    public mutating func flush() throws {}

}
