import AccessoryCapture
import AccessoryCore

/// An opened device whose transfers are recorded in a capture: its endpoints' transfers (the
/// streams' and the one-transfer calls') and its control transfers. Everything else goes to the connection it wraps.
final class CapturingConnection: USBDeviceConnection {
    let inner: any USBDeviceConnection
    let recorder: CaptureRecorder
    let bus: Int
    let device: Int

    init(_ inner: any USBDeviceConnection, recorder: CaptureRecorder, bus: Int, device: Int) {
        self.inner = inner
        self.recorder = recorder
        self.bus = bus
        self.device = device
    }

    func makeEndpointTransfers(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int
    ) throws(AccessoryError) -> any EndpointTransfers {
        CapturingEndpointTransfers(
            try inner.makeEndpointTransfers(endpoint: endpoint, type: type, maxPacketSize: maxPacketSize),
            site: site(type))
    }

    /// Where an endpoint of this transfer type records its transfers.
    private func site(_ type: USBEndpoint.TransferType) -> CaptureSite {
        CaptureSite(recorder: recorder, bus: bus, device: device, kind: type == .interrupt ? .interrupt : .bulk)
    }

    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        let (length, sent): (Int, [UInt8]) =
            switch data {
            case .receive(let n): (n, [])
            case .send(let bytes): (bytes.count, bytes)
            }
        let requestType = request.requestType(isIn: data.isIn)
        let urb = recorder.submit(
            bus: bus, device: device, endpoint: requestType & 0x80, kind: .control,
            setup: USBCapture.Setup(
                requestType: requestType, request: request.request, value: request.value, index: request.index,
                length: UInt16(clamping: length)),
            data: sent[...], requestedLength: length)
        do {
            let received = try await inner.controlTransfer(request, data, timeout: timeout)
            recorder.complete(urb, control: .success(received), sent: sent.count)
            return received
        } catch {
            recorder.complete(urb, control: .failure(error), sent: sent.count)
            throw error
        }
    }

    func claimInterface(_ number: UInt8) throws(AccessoryError) { try inner.claimInterface(number) }
    func releaseInterface(_ number: UInt8) throws(AccessoryError) { try inner.releaseInterface(number) }
    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {
        try inner.setAlternateSetting(alternate, interface: number)
    }
    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool {
        try inner.isKernelDriverActive(interface: number)
    }
    func detachKernelDriver(interface number: UInt8) throws(AccessoryError) { try inner.detachKernelDriver(interface: number) }
    func attachKernelDriver(interface number: UInt8) throws(AccessoryError) { try inner.attachKernelDriver(interface: number) }
    func clearHalt(endpoint: UInt8) throws(AccessoryError) { try inner.clearHalt(endpoint: endpoint) }
    func reset() throws(AccessoryError) { try inner.reset() }
    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration? {
        inner.configurationWithInterfaceNames(timeout: timeout)
    }
}
