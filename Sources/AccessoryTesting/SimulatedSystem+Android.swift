import AccessoryCore
import AccessoryKit

/// Android Open Accessory: the strings each phone instance holds, and the switch to
/// accessory mode that START asks for.
extension SimulatedSystem {
    /// Sets who re-enumerates a phone that received START.
    func setModeSwitchHandler(_ handler: @escaping @Sendable (UInt64) -> Void) {
        state.withLock { $0.onModeSwitch = handler }
    }

    /// The AOA strings an instance holds, indices 0–5 (`nil`: never sent).
    func androidStrings(instance: UInt64) -> [String?] {
        state.withLock { $0.androidStrings[instance] ?? Array(repeating: nil, count: 6) }
    }

    /// Hands the strings of one instance to its successor in accessory mode.
    func copyAndroidStrings(from old: UInt64, to new: UInt64) {
        state.withLock { s in s.androidStrings[new] = s.androidStrings[old] }
    }

    /// A phone's answer to an AOA request (vendor, to the device), or `nil` for any other
    /// request, which its responder answers. GET_PROTOCOL (51) says 2 and clears the
    /// strings; SEND_STRING (52) stores index 0–5; START (53) on a phone switches it.
    func androidControl(
        instance: UInt64, role: SimulatedAccessory.AndroidRole, _ request: ControlRequest, _ data: [UInt8]?
    ) -> SimulatedResponder.ControlReply? {
        guard request.kind == .vendor, request.recipient == .device else { return nil }
        switch request.request {
        case AndroidOpenAccessory.getProtocol where data == nil:
            state.withLock { $0.androidStrings[instance] = nil }
            return .data([2, 0])
        case AndroidOpenAccessory.sendString where data != nil:
            guard request.index <= 5, let data, data.count <= 256 else { return .stall }
            let text = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
            state.withLock { s in
                var strings = s.androidStrings[instance] ?? Array(repeating: nil, count: 6)
                strings[Int(request.index)] = text
                s.androidStrings[instance] = strings
            }
            return .accept
        case AndroidOpenAccessory.start where data != nil:
            if role == .phone, let handler = state.withLock({ $0.onModeSwitch }) { handler(instance) }
            return .accept
        default:
            return .stall
        }
    }

    /// Whether a request is AOA's START (53).
    static func isStart(_ request: ControlRequest, _ data: [UInt8]?) -> Bool {
        request.kind == .vendor && request.recipient == .device && request.request == AndroidOpenAccessory.start && data != nil
    }
}
