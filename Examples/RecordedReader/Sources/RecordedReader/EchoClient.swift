import AccessoryKit

/// An app's client for an accessory that speaks `org.example.loopback`: it sends a message
/// as one bulk OUT transfer and reads the answer as one bulk IN transfer. An accessory whose
/// interface carries no protocol string, as most real devices', is opened by its interface
/// number instead.
public struct EchoClient: Sendable {
    /// The protocol the accessory's interface names.
    public static let protocolName = "org.example.loopback"

    public let manager: AccessoryManager
    public let accessory: Accessory
    /// The interface to open by number, or `nil` to open the one named by ``protocolName``.
    public let interface: UInt8?

    public init(manager: AccessoryManager, accessory: Accessory, interface: UInt8? = nil) {
        self.manager = manager
        self.accessory = accessory
        self.interface = interface
    }

    /// Opens a session, sends `message` on bulk OUT 0x01 and returns what comes back on bulk
    /// IN 0x81 (at most 512 bytes, one transfer).
    public func send(_ message: [UInt8], timeout: Duration = .seconds(1)) async throws(AccessoryError) -> [UInt8] {
        let session = try await open()
        do {
            try await session.transferOut(0x01, message, timeout: timeout)
            let answer = try await session.transferIn(0x81, length: 512, timeout: timeout)
            await session.close()
            return answer
        } catch {
            await session.close()
            throw error
        }
    }

    private func open() async throws(AccessoryError) -> AccessorySession {
        if let interface { return try await manager.openSession(to: accessory, interface: interface) }
        return try await manager.openSession(to: accessory, protocol: Self.protocolName)
    }

    /// ``send(_:timeout:)`` with a text message, answered as text.
    public func send(_ text: String, timeout: Duration = .seconds(1)) async throws(AccessoryError) -> String {
        String(decoding: try await send(Array(text.utf8), timeout: timeout), as: UTF8.self)
    }
}
