import Foundation
import Logging

/// A logger for tests: quiet, unless `ACCESSORYKIT_TRACE` is set, then everything to stderr.
let testLogger: Logger = {
    var logger = Logger(label: "accessorykit-test", factory: { StreamLogHandler.standardError(label: $0) })
    logger.logLevel = ProcessInfo.processInfo.environment["ACCESSORYKIT_TRACE"] != nil ? .trace : .critical
    return logger
}()
