import AccessoryCapture
import FuzzSupport

/// libFuzzer entry point: any bytes, read as a usbmon capture, must give transfers and a
/// summary or a USBCaptureError, never a crash, a hang or an allocation beyond the block limit;
/// and within small limits, never more devices or endpoints than they allow.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCaptureReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let capture = try? USBCapture(bytes: bytes, name: "fuzz") {
        for device in capture.devices {
            for transfer in capture.transfers(of: device) { _ = transfer.data.count + transfer.requestedLength }
        }
    }
    _ = try? USBCaptureSummary(bytes: bytes, name: "fuzz")
    // The same bytes through a reader with a tiny buffer: chunk boundaries anywhere.
    var reader = USBMonReader(bytes: bytes, name: "fuzz", chunkSize: 7)
    while let record = try? reader.next() { _ = reader.data(of: record) }
    // Again with tiny limits, so that small inputs reach them: interfaces past the limit,
    // devices and endpoints past it, pending requests past it (hostile files' shapes).
    let tiny = USBCaptureLimits(interfaces: 2, devices: 2, endpoints: 3, pendingRequests: 2)
    if let capture = try? USBCapture(bytes: bytes, name: "fuzz", chunkSize: 64, limits: tiny) {
        precondition(capture.devices.count <= tiny.devices)
        _ = capture.dropped
    }
    if let summary = try? USBCaptureSummary(bytes: bytes, name: "fuzz", limits: tiny) {
        precondition(summary.devices.reduce(0) { $0 + $1.endpoints.count } <= tiny.endpoints)
        _ = summary.drops.sentences
    }
    return 0
}

@main
enum FuzzCaptureReaderMain {
    static func main() { fuzzMain(fuzzCaptureReader) }
}
