import AccessoryCore
import AccessoryKit

/// An opened simulated device. Sessions are not wired to simulated endpoints yet, so opening
/// one is refused with a clear error.
final class SimulatedDeviceConnection: USBDeviceConnection {
    init(system: SimulatedSystem, device: SimulatedSystem.Device) throws(AccessoryError) {
        throw AccessoryError(.io, "sessions on simulated accessories are not available yet", operation: "open")
    }

    func claimInterface(_ number: UInt8) throws(AccessoryError) {}
    func releaseInterface(_ number: UInt8) throws(AccessoryError) {}
    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {}
    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool { false }
    func detachKernelDriver(interface number: UInt8) throws(AccessoryError) {}
    func attachKernelDriver(interface number: UInt8) throws(AccessoryError) {}
    func clearHalt(endpoint: UInt8) throws(AccessoryError) {}
    func reset() throws(AccessoryError) {}
    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration? { nil }
}
