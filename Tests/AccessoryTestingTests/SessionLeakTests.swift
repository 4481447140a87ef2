import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Logging
import Synchronization
import Testing

/// Sessions that nobody closes: they must not keep their device for as long as the manager
/// lives (they used to: the manager and the session held each other).
@Suite("Dropped sessions")
struct SessionLeakTests {
    /// Collects warnings.
    final class Warnings: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger {
            Logger(label: "leak-test") { _ in Handler(sink: self) }
        }
        struct Handler: LogHandler {
            let sink: Warnings
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .warning
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                sink.lines.withLock { $0.append("\(event.message)") }
            }
        }
    }

    static let loopback = "org.example.loopback"

    @Test("A session dropped without close() is closed and reported, and the protocol can be opened again")
    func droppedSessionIsClosed() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        let warnings = Warnings()
        try await withAccessoryManager(configuration: .init(logger: warnings.logger), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            do {
                let forgotten = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "forgotten")
                try await forgotten.write([1, 2, 3])
            }  // dropped here, never closed
            var reopened: AccessorySession?
            for _ in 0..<1000 where reopened == nil {
                do throws(AccessoryError) {
                    reopened = try await manager.openSession(to: accessory, protocol: Self.loopback, name: "second")
                } catch {
                    #expect(error.code == .busy, "\(error)")
                    await Task.yield()
                }
            }
            let second = try #require(reopened, "the dropped session still holds the interface")
            #expect(await manager.openSessions.map(\.name) == ["second"])
            await second.close()
        }
        let lines = warnings.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("session 'forgotten'") && $0.contains("dropped without close()") }, "\(lines)")
        #expect(!lines.contains { $0.contains("'second'") }, "a closed session is not reported: \(lines)")
    }
}
