import AccessoryCapture
import AccessoryCore
import AccessoryKit

extension SimulatedAccessory {
    /// A recorded device: it answers the host's transfers from `capture`'s record of
    /// `device`, and shows the descriptors the recording shows.
    ///
    /// ```swift
    /// let capture = try USBCapture(path: "Fixtures/reader.pcapng")
    /// let usb = SimulatedUSB()
    /// let reader = await usb.plug(try SimulatedAccessory(replaying: capture, device: capture.devices[0]))
    /// // … the code under test talks to it as to the real reader …
    /// let report = await usb.replayReport(of: reader)
    /// #expect(report.divergences.isEmpty && report.unconsumed == 0)
    /// ```
    ///
    /// - Matching is per endpoint in recorded order, control counting as one endpoint. An
    ///   OUT transfer or a control request must carry the recorded setup and bytes; an IN
    ///   transfer gets the recorded bytes and status (`-EPIPE` is `.stall`, the others as on
    ///   hardware).
    /// - A recorded transfer whose data the capture cut (`data.count < length`, a snap
    ///   length's doing) cannot be replayed exactly: an IN transfer on it fails with `.io`
    ///   naming its index and both sizes, a divergence; an OUT transfer matches on the bytes
    ///   the capture kept and the recorded length.
    /// - The standard requests the stack makes itself (GET_DESCRIPTOR, SET_CONFIGURATION,
    ///   SET_INTERFACE, CLEAR_FEATURE) are answered from the descriptors and not matched, so
    ///   the recorded ones need not be repeated. Nor need the recorded transfers the host
    ///   cancelled (`-ENOENT`, `-ECONNRESET`) or that never completed.
    /// - A divergence (other bytes, another setup, an OUT or control request with nothing
    ///   left) fails that transfer with an `AccessoryError` (`.io`) naming the transfer's
    ///   index in `capture.transfers(of: device)`, its endpoint, and the expected and actual
    ///   bytes from the first difference; ``SimulatedUSB/replayReport(of:)`` lists it. An IN
    ///   transfer beyond the recording waits, as a device with nothing to send does (the
    ///   report counts it in ``SimulatedReplayReport/waitingBeyondRecording``), and so does
    ///   one held for a recorded transfer the host cancelled.
    /// - A replay ends: once nothing else in the simulation can happen for its stall limit
    ///   (8 s of real time), such a waiting transfer that someone awaits (a call, or a stream
    ///   while a read waits on it) fails with `.io` naming its endpoint and the recording's
    ///   last transfer there, and is a divergence. A stream's read-ahead that nobody reads
    ///   keeps waiting.
    ///
    /// Each accessory made this way is one playback: plug a new one to start again.
    ///
    /// - Parameters:
    ///   - capture: a usbmon capture (Wireshark, `tcpdump -i usbmonN`, or this package's
    ///     `Configuration(capturePath:)` and `accessoryctl open --capture`).
    ///   - device: the device of the capture to play.
    ///   - recording: a `umockdev-record` file of the same device, for the descriptors and
    ///     strings the capture lacks (many captures start after enumeration): its `H:
    ///     descriptors=` and string attributes, for the device with the capture's vendor and
    ///     product when the capture knows them (at its bus and address if several have
    ///     them), else for the device at the capture's bus and address.
    ///   - pacing: ``ReplayPacing/immediate`` (the default) or each answer after its recorded
    ///     duration on the virtual clock.
    /// - Throws: `AccessoryError` `.notFound` saying which descriptor is missing when neither
    ///   the capture nor `recording` has it, or that `recording` has no such device.
    public init(replaying capture: USBCapture, device: USBCapture.Device, recording: String? = nil, pacing: ReplayPacing = .immediate)
        throws(AccessoryError)
    {
        let transfers = capture.transfers(of: device)
        let descriptors = try RecordedDescriptors(device: device, transfers: transfers, recording: recording)
        let d = descriptors.device
        let label = "replayed \(Hex.four(d.vendor)):\(Hex.four(d.product)) (bus \(device.bus) address \(device.address) of the capture)"
        let script = ReplayScript(label: label, transfers: transfers, descriptors: descriptors, pacing: pacing)
        let interfaces = Dictionary(grouping: descriptors.configuration.interfaces, by: \.number).sorted { $0.key < $1.key }.map { _, settings in
            let ordered = settings.sorted { $0.alternate < $1.alternate }
            let endpoints = ordered.map { $0.endpoints.compactMap(AccessoryEndpoint.init) }
            return SimulatedInterface(protocol: ordered[0].name ?? "", endpoints: endpoints[0], alternateSettings: Array(endpoints.dropFirst()))
        }
        self.init(
            vendor: d.vendor, product: d.product, serial: descriptors.string(d.serialNumberIndex), interfaces: interfaces,
            responder: SimulatedResponder { transfer, _ in script.answer(transfer) },
            manufacturer: descriptors.string(d.manufacturerIndex), name: descriptors.string(d.productIndex), bcdDevice: d.bcdDevice)
        self.recorded = descriptors
        self.replay = script
    }
}
