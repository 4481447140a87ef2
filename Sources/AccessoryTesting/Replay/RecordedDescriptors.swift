import AccessoryCapture
import AccessoryCore
import AccessoryKit

/// What a replayed device shows of itself: its device and configuration descriptors and its
/// strings, taken from the GET_DESCRIPTOR answers in a capture, or else from a
/// `umockdev-record` file of the same device. It answers the standard requests the stack
/// makes itself (GET_DESCRIPTOR, SET_CONFIGURATION, SET_INTERFACE, CLEAR_FEATURE).
struct RecordedDescriptors: Sendable, Hashable {
    /// The 18-byte device descriptor.
    let deviceBytes: [UInt8]
    /// The first configuration, `wTotalLength` bytes.
    let configurationBytes: [UInt8]
    let device: USBDeviceDescriptor
    /// The configuration, interface names filled in from ``strings``.
    let configuration: USBConfiguration
    /// String descriptors by index (0, the language list, aside).
    let strings: [UInt8: String]
    /// Every GET_DESCRIPTOR the capture answered, by `bmRequestType`, `wValue` and `wIndex`:
    /// class descriptors (a HID report descriptor) are answered as recorded.
    let recordedAnswers: [UInt64: [UInt8]]

    /// The standard requests answered here, not matched against the recording.
    static let answeredRequests: Set<UInt8> = [getDescriptor, setConfiguration, setInterface, clearFeature]
    static let clearFeature: UInt8 = 1
    static let getDescriptor: UInt8 = 6
    static let setConfiguration: UInt8 = 9
    static let setInterface: UInt8 = 11

    /// Whether a recorded setup is one of the standard requests answered from the descriptors.
    static func isAnswered(_ setup: USBCapture.Setup) -> Bool {
        setup.requestType & 0x60 == 0 && answeredRequests.contains(setup.request)
    }

    /// The descriptors of `device` in `capture` (its `transfers`), completed from the
    /// umockdev recording at `recording`.
    ///
    /// - Throws: `AccessoryError` `.notFound` saying which descriptor is missing, or that the
    ///   recording has no such device.
    init(device: USBCapture.Device, transfers: [USBCapture.Transfer], recording: String?) throws(AccessoryError) {
        let label = "bus \(device.bus) address \(device.address)"
        var answers: [UInt64: [UInt8]] = [:]
        for t in transfers {
            guard let s = t.setup, t.status == 0, s.requestType & 0xe0 == 0x80, s.request == Self.getDescriptor else { continue }
            let key = Self.key(s.requestType, s.value, s.index)
            if t.data.count > answers[key]?.count ?? -1 { answers[key] = t.data }
        }
        recordedAnswers = answers
        var deviceBytes = answers[Self.key(0x80, 0x0100, 0)].flatMap { $0.count >= USBDeviceDescriptor.size ? $0 : nil }
        var configurationBytes = answers[Self.key(0x80, 0x0200, 0)].flatMap { Self.isWhole($0) ? $0 : nil }
        var strings: [UInt8: String] = [:]
        for (key, bytes) in answers where key >> 40 == 0x80 && (key >> 24) & 0xff == 3 {
            let index = UInt8(truncatingIfNeeded: key >> 16)
            if index != 0, let text = USBStringDescriptor.decode(bytes) { strings[index] = text }
        }
        var fallback: UmockdevRecording.Device?
        if deviceBytes == nil || configurationBytes == nil, let recording {
            let file = try UmockdevRecording(path: recording)
            guard let d = file.device(bus: device.bus, address: device.address, vendor: device.vendor, product: device.product) else {
                let known = file.devices.map { "\($0.vendor.map(Hex.four) ?? "????"):\($0.product.map(Hex.four) ?? "????") on bus \($0.bus ?? 0) address \($0.address ?? 0)" }
                throw AccessoryError(
                    .notFound,
                    "the umockdev recording \(recording) has no device "
                        + (device.vendor.flatMap { v in device.product.map { "with ID \(Hex.four(v)):\(Hex.four($0)) (the capture's)" } } ?? "at \(label)")
                        + "; it has \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                    operation: "replay")
            }
            fallback = d
            if deviceBytes == nil, d.descriptors.count >= USBDeviceDescriptor.size {
                deviceBytes = Array(d.descriptors.prefix(USBDeviceDescriptor.size))
            }
            if configurationBytes == nil {
                let rest = Array(d.descriptors.dropFirst(USBDeviceDescriptor.size))
                if Self.isWhole(rest) { configurationBytes = Array(rest.prefix(Self.totalLength(rest))) }
            }
        }
        let missing = recording == nil ? "the capture has no GET_DESCRIPTOR answer for it and no umockdev recording was given"
            : "neither the capture nor the umockdev recording \(recording!) has it"
        guard let deviceBytes, let configurationBytes else {
            let lacking = [deviceBytes == nil ? "no device descriptor" : nil, configurationBytes == nil ? "no configuration descriptor" : nil]
            throw AccessoryError(
                .notFound, "cannot replay the device at \(label): \(lacking.compactMap { $0 }.joined(separator: " and ")) (\(missing))",
                operation: "replay")
        }
        let parsedDevice: USBDeviceDescriptor
        var parsedConfiguration: USBConfiguration
        do {
            parsedDevice = try USBDescriptorParser.parseDevice(deviceBytes)
            parsedConfiguration = try USBDescriptorParser.parseConfiguration(configurationBytes).configuration
        } catch {
            throw AccessoryError(.invalidArgument, "cannot replay the device at \(label): its recorded descriptors are unusable: \(error)", operation: "replay")
        }
        if let fallback {
            let named: [(UInt8, String?)] = [
                (parsedDevice.manufacturerIndex, fallback.manufacturer), (parsedDevice.productIndex, fallback.productName),
                (parsedDevice.serialNumberIndex, fallback.serial),
            ]
            for (index, text) in named where index != 0 && strings[index] == nil { strings[index] = text }
        }
        for i in parsedConfiguration.interfaces.indices {
            parsedConfiguration.interfaces[i].name = strings[parsedConfiguration.interfaces[i].nameIndex]
        }
        self.deviceBytes = deviceBytes
        self.configurationBytes = configurationBytes
        self.device = parsedDevice
        self.configuration = parsedConfiguration
        self.strings = strings
    }

    func string(_ index: UInt8) -> String? { index == 0 ? nil : strings[index] }

    /// The answer to a standard request the stack makes itself, `nil` for any other request.
    func answer(_ request: ControlRequest, isIn: Bool) -> SimulatedTransfer.Answer? {
        guard request.kind == .standard, Self.answeredRequests.contains(request.request) else { return nil }
        guard request.request == Self.getDescriptor else { return .accept }
        if let recorded = recordedAnswers[Self.key(request.requestType(isIn: isIn), request.value, request.index)] { return .data(recorded) }
        guard request.recipient == .device else { return .stall }
        let index = UInt8(truncatingIfNeeded: request.value)
        switch request.value >> 8 {
        case 1: return .data(deviceBytes)
        case 2 where index == 0: return .data(configurationBytes)
        case 3 where index == 0: return .data(USBDescriptorEncoder.languages)
        case 3: return strings[index].map { .data(USBDescriptorEncoder.string($0)) } ?? .stall
        default: return .stall
        }
    }

    private static func key(_ requestType: UInt8, _ value: UInt16, _ index: UInt16) -> UInt64 {
        UInt64(requestType) << 40 | UInt64(value) << 16 | UInt64(index)
    }

    private static func totalLength(_ bytes: [UInt8]) -> Int { Int(bytes[2]) | Int(bytes[3]) << 8 }

    /// Whether `bytes` start with a configuration descriptor that is all there.
    private static func isWhole(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 9 && bytes[1] == 2 && bytes.count >= totalLength(bytes)
    }
}
