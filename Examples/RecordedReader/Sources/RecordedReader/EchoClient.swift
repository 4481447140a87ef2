import AccessoryKit

/// An app's client for an accessory that speaks `org.example.loopback`: it sends a message
/// as one bulk OUT transfer and reads the answer as one bulk IN transfer.
public struct EchoClient: Sendable {
    /// The protocol the accessory's interface names.
    public static let protocolName = "org.example.loopback"

    public let manager: AccessoryManager
    public let accessory: Accessory

    public init(manager: AccessoryManager, accessory: Accessory) {
        self.manager = manager
        self.accessory = accessory
    }

    /// Opens a session, sends `message` on bulk OUT 0x01 and returns what comes back on bulk
    /// IN 0x81 (at most 512 bytes, one transfer).
    public func send(_ message: [UInt8], timeout: Duration = .seconds(1)) async throws(AccessoryError) -> [UInt8] {
        try await manager.withSession(to: accessory, protocol: Self.protocolName) { (session) async throws(AccessoryError) in
            try await session.transferOut(0x01, message, timeout: timeout)
            return try await session.transferIn(0x81, length: 512, timeout: timeout)
        }
    }

    /// ``send(_:timeout:)`` with a text message, answered as text.
    public func send(_ text: String, timeout: Duration = .seconds(1)) async throws(AccessoryError) -> String {
        String(decoding: try await send(Array(text.utf8), timeout: timeout), as: UTF8.self)
    }
}
