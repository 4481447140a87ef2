/// A value made from every event of a capture, as ``USBCapture`` and ``USBCaptureSummary``
/// are: it reads files and bytes in memory alike.
package protocol USBMonConsumer {
    /// Reads every event of `reader`.
    init(reading reader: inout USBMonReader) throws(USBCaptureError)
}

extension USBMonConsumer {
    /// Reads a capture held in memory, named `name` in errors, `chunkSize` bytes at a time
    /// (by default all at once), within `limits`.
    package init(bytes: [UInt8], name: String, chunkSize: Int? = nil, limits: USBCaptureLimits = .standard) throws(USBCaptureError) {
        var reader = USBMonReader(bytes: bytes, name: name, chunkSize: chunkSize, limits: limits)
        try self.init(reading: &reader)
    }
}

extension USBCapture: USBMonConsumer {}
extension USBCaptureSummary: USBMonConsumer {}
