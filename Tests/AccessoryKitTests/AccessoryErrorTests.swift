import AccessoryCore
import Testing
@testable import AccessoryKit

@Suite("AccessoryError codes")
struct AccessoryErrorTests {
    @Test("Codes compare, switch with a default, carry the disconnect reason and print readably")
    func codes() {
        let gone = AccessoryError.Code.accessoryDisconnected(.unplugged)
        #expect(gone == .accessoryDisconnected(.unplugged) && gone != .accessoryDisconnected(.shutdown) && gone != .timeout)
        #expect(gone.disconnectReason == .unplugged && AccessoryError.Code.stall.disconnectReason == nil)
        func name(_ code: AccessoryError.Code) -> String {
            switch code {
            case .timeout: "timeout"
            case .stall: "stall"
            default: code.disconnectReason.map { "gone: \($0.code)" } ?? "other"
            }
        }
        #expect([name(.timeout), name(.stall), name(gone), name(.io)] == ["timeout", "stall", "gone: unplugged", "other"])
        #expect(gone.description == "accessoryDisconnected(unplugged)" && AccessoryError.Code.busy.description == "busy")
    }
}
