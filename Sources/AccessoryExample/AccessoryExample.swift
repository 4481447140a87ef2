import AccessoryCore
import AccessoryKit

/// The three things an application does with AccessoryKit: watch accessories, open a
/// session, and handle a disconnection with its reason.
///
///     accessory-sim --accessory 1209:0001:SN1 -- swift run accessory-example
@main
struct AccessoryExample {
    static let loopback = "org.example.loopback"

    static func main() async throws {
        try await withAccessoryManager(configuration: .init(supportedProtocols: [loopback])) { manager in
            // 1. Watch: the accessories present now, then every change, each with a reason.
            for await event in await manager.events() {
                switch event {
                case .connected(let accessory):
                    print("connected #\(accessory.connectionID): \(accessory.physicalIdentity) on \(accessory.descriptor.port)")
                    if try await echo(through: accessory, manager: manager) { return }
                case .disconnected(let accessory, let reason):
                    print("disconnected #\(accessory.connectionID): \(reason)")
                }
            }
        }
    }

    /// 2. Open a session for the protocol, write, and read the answer.
    /// - Returns: whether the echo came back.
    static func echo(through accessory: Accessory, manager: AccessoryManager) async throws -> Bool {
        do {
            return try await manager.withSession(to: accessory, protocol: loopback, name: "example") { session in
                try await session.write(Array("ping".utf8))
                for try await chunk in session.input {
                    print("received \(String(decoding: chunk, as: UTF8.self))")
                    return true
                }
                return false
            }
        } catch let error as AccessoryError {
            // 3. A disconnection says why: unplugged, ghost-evicted (with evidence) or shutdown.
            if let reason = error.code.disconnectReason {
                print("the accessory went away: \(reason)")
                return false
            }
            throw error
        }
    }
}
