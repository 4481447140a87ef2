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

    @Test("A ghost's disconnect names the operation once, in the library's form (ghost-evicted: …)")
    func ghostTextNamesTheOperationOnce() {
        let error = AccessorySession.disconnectedError(.ghostEvicted(.noDevice(operation: "bulk OUT 0x01")), label: "1209:0001 SN1")
        #expect(error.description == "accessory 1209:0001 SN1 disconnected: ghost-evicted: bulk OUT 0x01 returned NO_DEVICE")
        #expect(error.description.components(separatedBy: "bulk OUT 0x01").count == 2)
        #expect(error.operation == "bulk OUT 0x01")
        // Other errors still say which operation failed.
        #expect(AccessoryError(.stall, "the endpoint stalled", operation: "bulk IN 0x81").description == "the endpoint stalled (bulk IN 0x81)")
    }
}
