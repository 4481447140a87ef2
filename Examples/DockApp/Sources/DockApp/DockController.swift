import AccessoryKit

/// An app's dock logic: greet every dock that connects, and remember how each connection
/// ended.
public actor DockController {
    public private(set) var greetings: [String] = []
    public private(set) var endings: [DisconnectReason] = []

    public init() {}

    /// Handles the manager's notifications until the stream ends or the task is cancelled.
    public func run(_ manager: AccessoryManager) async throws {
        for await event in await manager.events() {
            switch event {
            case .connected(let dock):
                let answer = try await manager.withSession(to: dock, protocol: "org.example.loopback") { session in
                    try await session.write("hello")
                    return try await session.read(exactly: 5)
                }
                greetings.append(String(decoding: answer, as: UTF8.self))
            case .disconnected(_, let reason):
                endings.append(reason)
            }
        }
    }
}
