/// One usbmon event of a capture, as ``USBMonReader/next()`` returns it: the header, when and
/// where it was, and where its data lies in the reader's buffer.
package struct USBMonRecord: Sendable {
    /// The URB ID of one bus: the key that pairs a submission with its completion.
    package struct URBKey: Hashable, Sendable {
        package var bus: UInt16
        package var urbID: UInt64
    }

    package var header: USBMonHeader
    /// Nanoseconds since the Unix epoch: the packet's time, or the header's where the packet has none.
    package var timestamp: Int64
    /// Where the packet's block or record starts in the file.
    package var offset: Int
    /// The data (after any isochronous descriptors) is `dataStart ..< dataStart + dataCount`
    /// of the reader's buffer.
    package var dataStart: Int
    package var dataCount: Int

    package var key: URBKey { URBKey(bus: header.bus, urbID: header.urbID) }
}
