import AccessoryCore

/// One control transfer on an accessory's device, run off the manager's actor: it claims
/// the interface the request needs for the transfer's length (unless a session lent its
/// claim), names the accessory and the request when the device refuses (STALL) or does not
/// answer, and hands a NO_DEVICE to the manager's verdict.
struct ControlCall: Sendable {
    let device: any USBDeviceConnection
    /// The interface to claim for the transfer, or `nil` (none needed, or a session's claim
    /// is lent).
    let claim: UInt8?
    let accessory: Accessory
    let manager: AccessoryManager

    func callAsFunction(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        let label = AccessorySession.label(accessory)
        guard let claim else { return try await transfer(request, data, timeout: timeout, label: label) }
        do {
            try device.claimInterface(claim)
        } catch {
            guard error.code == .busy else { throw error }
            throw AccessoryError(
                .busy, "interface \(claim) of accessory \(label) is claimed by another process",
                operation: controlOperation(request, isIn: data.isIn), rawValue: error.rawValue)
        }
        defer { try? device.releaseInterface(claim) }
        return try await transfer(request, data, timeout: timeout, label: label)
    }

    private func transfer(
        _ request: ControlRequest, _ data: ControlData, timeout: Duration, label: String
    ) async throws(AccessoryError) -> [UInt8] {
        do {
            return try await device.controlTransfer(request, data, timeout: timeout)
        } catch {
            if error.code.disconnectReason != nil {
                await manager.reportNoDevice(accessory.connectionID, operation: error.operation ?? "control")
            }
            guard error.code == .stall || error.code == .timeout else { throw error }
            let what = "\(request.kind) request \(request.request) (\(request.recipient), value \(request.value), index \(request.index))"
            throw AccessoryError(
                error.code,
                error.code == .stall ? "accessory \(label) refused \(what) (STALL)" : "accessory \(label) did not answer \(what) within \(timeout)",
                operation: error.operation, rawValue: error.rawValue)
        }
    }
}
