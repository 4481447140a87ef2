extension AccessoryManager {
    /// Why the capture at ``Configuration/capturePath`` is incomplete, or `nil` while all is
    /// well (and without a capture).
    ///
    /// A write that fails or falls short (a full disk) ends the capture: the file is cut back
    /// to its last whole record, so that it reads to its end, and nothing more is recorded,
    /// while sessions and control requests go on. ``shutdown()`` syncs the file to its disk
    /// (`fsync(2)`), whose failure is kept here too. The error is `.io`, naming the file and
    /// the system's reason.
    public nonisolated var captureError: AccessoryError? {
        (host as? CapturingHost)?.recorder.error
    }
}
