import AccessoryCore
import AccessoryTraces
import Foundation
import Logging
import Synchronization
import AccessoryTestSupport
import Testing
@testable import AccessoryKit

/// A log handler that keeps every message, for assertions on warnings.
final class CapturedLog: Sendable {
    private let lines = Mutex<[(Logger.Level, String)]>([])

    var logger: Logger {
        var logger = Logger(label: "accessorykit-session-test") { _ in Handler(log: self) }
        logger.logLevel = .debug
        return logger
    }

    func messages(at level: Logger.Level) -> [String] {
        lines.withLock { $0.filter { $0.0 == level }.map(\.1) }
    }

    fileprivate func append(_ level: Logger.Level, _ message: String) {
        lines.withLock { $0.append((level, message)) }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(event.level, "\(event.message)")
        }
    }
}

enum SessionFixtures {
    /// `count` pseudo-random bytes, the same for the same seed.
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return rng.bytes(count)
    }

    /// Whether `chunk` equals `expected[offset ..< offset + chunk.count]` (memcmp, so that
    /// debug builds compare 64 MiB quickly).
    static func matches(_ chunk: [UInt8], _ expected: [UInt8], at offset: Int) -> Bool {
        guard offset + chunk.count <= expected.count else { return false }
        return chunk.withUnsafeBytes { c in
            expected.withUnsafeBytes { e in
                chunk.isEmpty || memcmp(c.baseAddress!, e.baseAddress! + offset, chunk.count) == 0
            }
        }
    }
}

extension AccessorySession {
    /// Writes `bytes` and reads them back.
    func echo(_ bytes: [UInt8]) async throws(AccessoryError) -> [UInt8] {
        try await write(bytes)
        return try await read(exactly: bytes.count)
    }
}
