import AccessoryCapture
import AccessoryCore

/// Where one endpoint's transfers go in a capture: the recorder, and the bus, device and
/// transfer type its records carry. ``CapturingEndpointTransfers`` (streams and one-transfer
/// calls alike) and the control transfers use it.
struct CaptureSite: Sendable {
    let recorder: CaptureRecorder
    let bus: Int
    let device: Int
    let kind: USBCapture.Transfer.Kind

    /// Records a submission on `endpoint` and hands its URB to `hold` (where the completion
    /// will find it) before running `submit`, as the completion may come before `submit`
    /// returns. When the submit fails, `release` takes the URB back and an `E` record is
    /// written instead of a completion.
    func submit(
        endpoint: UInt8, data: ArraySlice<UInt8>, length: Int, hold: (CaptureRecorder.URB) -> Void,
        release: (CaptureRecorder.URB) -> Void, _ submit: () -> AccessoryError?
    ) -> AccessoryError? {
        let urb = recorder.submit(bus: bus, device: device, endpoint: endpoint, kind: kind, data: data, requestedLength: length)
        hold(urb)
        guard let error = submit() else { return nil }
        release(urb)
        recorder.fail(urb, error)
        return error
    }
}
