import AccessoryKit
import ArgumentParser

/// How `open --capture` and `control --capture` end when the capture could not be written
/// (a full disk): the session or request is finished first, then the command names the file
/// and the error and exits 74 (`EX_IOERR`).
enum CaptureFailure {
    /// `EX_IOERR` of sysexits.h.
    static let exitCode = ExitCode(74)

    /// After `manager` has shut down (so the file is closed and synced): says on standard
    /// error why its capture is incomplete, if it is, and returns that.
    static func report(_ manager: AccessoryManager) -> AccessoryError? {
        guard let error = manager.captureError else { return nil }
        note("error: \(error.message)")
        return error
    }
}
