/// A capture that cannot be read or written: the file, the byte offset and the reason.
///
/// Prints as `FILE: at byte OFFSET: reason`, or `FILE: reason` when it concerns the whole file
/// (it cannot be opened, or a write failed).
public struct USBCaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file's path, or the name the reader was given.
    public var file: String
    /// Where the wrong block, record or packet starts in the file, counted from 0; `nil` when
    /// the problem is not at one place.
    public var offset: Int?
    /// What is wrong, in words.
    public var reason: String

    package init(file: String, offset: Int?, reason: String) {
        self.file = file
        self.offset = offset
        self.reason = reason
    }

    /// `FILE: at byte OFFSET: reason`.
    public var description: String {
        if let offset { return "\(file): at byte \(offset): \(reason)" }
        return "\(file): \(reason)"
    }
}
