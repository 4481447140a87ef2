import AccessoryCapture
import Testing

extension USBCapture {
    /// The device at `index`, in the order the capture lists them; the test stops, recording
    /// an issue, if there is no such device.
    func device(_ index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> Device {
        try #require(devices.indices.contains(index), "the capture has \(devices.count) devices", sourceLocation: sourceLocation)
        return devices[index]
    }

    /// The transfers of ``device(_:sourceLocation:)``.
    func transfersOfDevice(_ index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Transfer] {
        transfers(of: try device(index, sourceLocation: sourceLocation))
    }
}
