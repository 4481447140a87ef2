import AccessoryCore
import Logging

/// The device I/O of opening one session, off the manager's actor: open the node, find the
/// protocol's interface (reading interface names from the device when sysfs lacks them),
/// detach a kernel driver if asked, claim, select the alternate setting, and build the data
/// plane. It needs none of the manager's state: the manager hands it what it knows, and
/// registers the session it returns.
struct SessionOpener: Sendable {
    /// A device opened and an interface claimed for a session, not yet registered.
    struct Prepared: Sendable {
        var device: any USBDeviceConnection
        var interface: UInt8
        var inEndpoint: USBEndpoint
        var outEndpoint: USBEndpoint
        var detachedDriver: Bool
        var pipe: DataPlane

        /// Gives everything back: the transfers, the interface, a detached kernel driver.
        func undo() async {
            await pipe.close()
            pipe.releaseTransfers()
            try? device.releaseInterface(interface)
            if detachedDriver { try? device.attachKernelDriver(interface: interface) }
        }
    }

    var host: any USBHost
    /// What sysfs says of the device, and where it is now.
    var info: USBDeviceInfo
    var address: Int
    var protocolName: String
    /// The interface to open, by number, when the caller named one: the protocol name
    /// then only labels the session.
    var interfaceNumber: UInt8?
    var options: AccessorySession.Options
    var table: ProtocolTable
    var clock: any Clock<Duration>
    var logger: Logger
    /// `1209:0001 SN1`, for messages.
    var label: String
    var sessionName: String
    /// Told when a transfer finds the device (maybe) gone (see ``DataPlane``).
    var onNoDevice: @Sendable (DeviceGoneSign, DataPlane) -> Void

    /// How long an open that gets ACCESS is tried again (udevd applies its rule within tens
    /// of milliseconds of an arrival), and how often.
    static let accessRetryWindow: Duration = .seconds(1)
    static let accessRetryStep: Duration = .milliseconds(50)

    private var operation: String { "open session" }

    /// Opens the session's device and interface. Undoes what it did when a step fails.
    func open() async throws(AccessoryError) -> Prepared {
        var info = info
        var device: (any USBDeviceConnection)?
        // A number names the interface; else the protocol picks it: sysfs's strings first,
        // the device's own if needed.
        var interface: USBInterface?
        if let number = interfaceNumber { interface = try numbered(number) } else { interface = table.interface(for: protocolName, in: info) }
        if interface == nil, interfaceNumber == nil, info.configuration?.interfaces.contains(where: { $0.isVendorSpecific && $0.nameIndex != 0 && $0.name == nil }) ?? true {
            let opened = try await openDevice()
            device = opened
            if let named = opened.configurationWithInterfaceNames() {
                info.configuration = named
                interface = table.interface(for: protocolName, in: info)
            }
        }
        guard let interface else {
            let spoken = table.protocols(for: info) ?? []
            throw AccessoryError(
                .protocolNotSupported,
                "accessory \(label) does not speak \(protocolName); "
                    + (spoken.isEmpty ? "it declares no protocol" : "it speaks \(spoken.joined(separator: ", "))"),
                operation: operation)
        }
        // A direction with no endpoint (a reader with only a bulk IN) gets a stream that says so.
        let foundIn = Self.streamEndpoint(of: interface, .in), foundOut = Self.streamEndpoint(of: interface, .out)
        guard foundIn != nil || foundOut != nil else {
            throw AccessoryError(
                .protocolNotSupported,
                "interface \(interface.number) of accessory \(label)\(interfaceNumber == nil ? ", which carries \(protocolName)," : "") has no bulk or interrupt endpoint",
                operation: operation)
        }
        let handle: any USBDeviceConnection
        if let device { handle = device } else { handle = try await openDevice() }
        let detached = try claim(interface.number, on: handle)
        do throws(AccessoryError) {
            if interface.alternate != 0 { try handle.setAlternateSetting(interface.alternate, interface: interface.number) }
            let inEndpoint = foundIn ?? AbsentEndpointQueue.placeholder(.in)
            let outEndpoint = foundOut ?? AbsentEndpointQueue.placeholder(.out)
            let calls = EndpointCalls(
                device: handle, interface: interface.number, alternate: interface.alternate,
                settings: Self.alternateSettings(of: interface.number, in: info.configuration), sessionDescription: description)
            let pipe = try makeDataPlane(handle, in: inEndpoint, out: outEndpoint, interface: interface.number, calls: calls)
            return Prepared(
                device: handle, interface: interface.number, inEndpoint: inEndpoint, outEndpoint: outEndpoint,
                detachedDriver: detached, pipe: pipe)
        } catch {
            try? handle.releaseInterface(interface.number)
            if detached { try? handle.attachKernelDriver(interface: interface.number) }
            throw error
        }
    }

    /// Interface `number` in its lowest alternate setting, or `.invalidArgument` naming
    /// the interfaces the device has.
    private func numbered(_ number: UInt8) throws(AccessoryError) -> USBInterface {
        let interfaces = info.configuration?.interfaces ?? []
        if let found = interfaces.filter({ $0.number == number }).min(by: { $0.alternate < $1.alternate }) { return found }
        let numbers = Set(interfaces.map(\.number)).sorted().map(String.init)
        throw AccessoryError(
            .invalidArgument,
            "accessory \(label) has no interface \(number); "
                + (numbers.isEmpty ? "sysfs lists no interface of it" : "it has \(numbers.joined(separator: ", "))"),
            operation: operation)
    }

    /// `session 'x'`, for messages.
    private var description: String { "session '\(sessionName)'" }

    /// Opens the device node. libusb #1586: in the first moments after an arrival, before
    /// udevd has applied its rule, the node is still root's and opening it fails with ACCESS;
    /// it is tried again for ``accessRetryWindow`` before that error, with the udev rule
    /// that fixes it, is thrown. Any other error is thrown at once.
    private func openDevice() async throws(AccessoryError) -> any USBDeviceConnection {
        var waited: Duration = .zero
        while true {
            do {
                return try host.open(bus: info.descriptor.bus, address: address, vendor: info.descriptor.vendor, product: info.descriptor.product)
            } catch where error.code == .accessDenied {
                guard waited < Self.accessRetryWindow else { throw accessDenied(error) }
                do {
                    try await clock.sleep(for: Self.accessRetryStep)
                } catch let stalled as AccessoryError {
                    throw stalled  // a simulated clock that nothing moves
                } catch {
                    throw AccessoryError(.cancelled, "the open was cancelled", operation: operation)
                }
                waited += Self.accessRetryStep
            }
        }
    }

    /// The access error with the udev rule that fixes it.
    private func accessDenied(_ error: AccessoryError) -> AccessoryError {
        guard let vendor = info.descriptor.vendor else { return error }
        let hint = (try? UdevRule(vendor: vendor, product: info.descriptor.product))?.installHint ?? ""
        return AccessoryError(
            .accessDenied, "no permission to open \(info.devicePath ?? "the device node") of accessory \(label); install a udev rule: \(hint)",
            operation: error.operation, rawValue: error.rawValue)
    }

    /// Claims interface `number`, detaching a kernel driver first when the options ask.
    /// - Returns: whether a kernel driver was detached (to attach again at close).
    private func claim(_ number: UInt8, on handle: any USBDeviceConnection) throws(AccessoryError) -> Bool {
        var detached = false
        if options.detachKernelDriver, (try? handle.isKernelDriverActive(interface: number)) == true {
            try handle.detachKernelDriver(interface: number)
            detached = true
            logger.debug("detached the kernel driver from interface \(number) of \(label)")
        }
        do {
            try handle.claimInterface(number)
        } catch {
            if detached { try? handle.attachKernelDriver(interface: number) }
            guard error.code == .busy else { throw error }
            let driverBound = (try? handle.isKernelDriverActive(interface: number)) == true
            throw AccessoryError(
                .busy,
                driverBound
                    ? "a kernel driver is bound to interface \(number) of accessory \(label); open with detachKernelDriver: true (accessoryctl open --detach-kernel-driver) to take it over"
                    : "interface \(number) of accessory \(label) is claimed by another process",
                operation: error.operation, rawValue: error.rawValue)
        }
        return detached
    }

    /// A session's data plane over the device's transfer queues for its two endpoints.
    private func makeDataPlane(
        _ device: any USBDeviceConnection, in inEndpoint: USBEndpoint, out outEndpoint: USBEndpoint, interface number: UInt8,
        calls: EndpointCalls
    ) throws(AccessoryError) -> DataPlane {
        let configuration = DataPlane.Configuration(
            options: options, inPacketSize: inEndpoint.packetSize, outPacketSize: outEndpoint.packetSize,
            sessionDescription: description)
        let (input, output) = (configuration.input, configuration.output)
        /// A stream's queue on `endpoint`, or one that says the interface has none.
        func queue(_ endpoint: USBEndpoint, _ direction: USBEndpoint.Direction, transfers: Int, size: Int) throws(AccessoryError) -> any EndpointQueue {
            guard !AbsentEndpointQueue.isPlaceholder(endpoint.address) else {
                return AbsentEndpointQueue(
                    direction: direction, interface: "interface \(number) of accessory \(label)", device: description, capacity: transfers)
            }
            let primitive = try device.makeEndpointTransfers(
                endpoint: endpoint.address, type: endpoint.transferType, maxPacketSize: endpoint.packetSize)
            return try TransferQueue(primitive, maxPacketSize: endpoint.packetSize, capacity: transfers, transferSize: size)
        }
        let inQueue = try queue(inEndpoint, .in, transfers: input.transfersInFlight, size: input.transferLength)
        let outQueue = try queue(outEndpoint, .out, transfers: output.transfersInFlight, size: output.transferSize)
        let clock = self.clock
        return DataPlane(
            input: inQueue, output: outQueue, configuration: configuration, sleep: { try await clock.sleep(for: $0) },
            calls: calls, onNoDevice: onNoDevice)
    }

    /// The endpoint a session streams through in one direction: the first bulk one, else
    /// the first interrupt one.
    static func streamEndpoint(of interface: USBInterface, _ direction: USBEndpoint.Direction) -> USBEndpoint? {
        interface.endpoints.first { $0.transferType == .bulk && $0.direction == direction }
            ?? interface.endpoints.first { $0.transferType == .interrupt && $0.direction == direction }
    }

    /// Each alternate setting of interface `number`: its bulk and interrupt endpoints.
    static func alternateSettings(of number: UInt8, in configuration: USBConfiguration?) -> [UInt8: [AccessoryEndpoint]] {
        var settings: [UInt8: [AccessoryEndpoint]] = [:]
        for interface in configuration?.interfaces ?? [] where interface.number == number && settings[interface.alternate] == nil {
            settings[interface.alternate] = interface.endpoints.compactMap(AccessoryEndpoint.init)
        }
        return settings
    }
}
