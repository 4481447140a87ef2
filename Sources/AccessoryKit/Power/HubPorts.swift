import AccessoryCore

/// The real host's hubs and port power: sysfs for the hubs, their ports' `disable`, `peer`
/// and the devices' `authorized`; hub class requests through libusb for the hub descriptor,
/// port status and `PORT_POWER` where sysfs has no `disable`. What a recovery ladder stands
/// on (``USBHost/hubs()``, ``USBHost/setPortPower(_:on:)``, ``USBHost/reauthorize(port:)``).
struct HubPorts: Sendable {
    let files: SysfsPortFiles
    /// Opens a device by bus and address (the host's `open`).
    let open: @Sendable (_ bus: Int, _ address: Int) throws(AccessoryError) -> any USBDeviceConnection
    /// One device of the OS truth by its port chain.
    let device: @Sendable (_ port: String) -> USBDeviceInfo?

    /// How long a hub request may take.
    static let timeout: Duration = .seconds(1)

    /// Every hub, root hubs first, by bus and port chain.
    func hubs() async -> [USBHub] {
        let names = (SysfsFiles.list(files.root) ?? []).filter { !$0.contains(":") }
        var hubs: [USBHub] = []
        for name in names.sorted(by: Self.portOrder) {
            guard SysfsFiles.integer(files.root + "/" + name + "/bDeviceClass", radix: 16, as: UInt8.self) == 0x09,
                  let hub = await hub(named: name)
            else { continue }
            hubs.append(hub)
        }
        return hubs
    }

    /// One hub by its port chain (`1-1`, `usb1`), or `nil` when there is none.
    func hub(named name: String) async -> USBHub? {
        let dir = files.root + "/" + name
        guard let bus = SysfsFiles.integer(dir + "/busnum", as: Int.self),
              let address = SysfsFiles.integer(dir + "/devnum", as: Int.self)
        else { return nil }
        let version = SysfsFiles.string(dir + "/version").map { String($0.trimmingSpaces) } ?? "?"
        var hub = USBHub(name: name, bus: bus, address: address, usbVersion: version, switching: nil, peer: nil, ports: [])
        // The port directories say how many ports there are (maxchild counts them too).
        let count = SysfsFiles.integer(dir + "/maxchild", as: Int.self) ?? 0
        var status: [Int: UInt16] = [:]
        do throws(AccessoryError) {
            let connection = try open(bus, address)
            let descriptor = try await connection.controlTransfer(
                HubRequest.hubDescriptor(superSpeed: hub.isSuperSpeed), .receive(64), timeout: Self.timeout)
            if descriptor.count >= 5 {
                hub.switching = PortPowerSwitching(hubCharacteristics: UInt16(descriptor[3]) | UInt16(descriptor[4]) << 8)
            }
            let ports = descriptor.count >= 3 ? Int(descriptor[2]) : count
            for n in 1...max(1, ports) where ports > 0 {
                let bytes = try await connection.controlTransfer(HubRequest.portStatus(n), .receive(4), timeout: Self.timeout)
                if bytes.count >= 2 { status[n] = UInt16(bytes[0]) | UInt16(bytes[1]) << 8 }
            }
        } catch {
            hub.note = "cannot read hub \(name)'s descriptor and port status: \(error.message)"
        }
        let ports = status.isEmpty ? portNumbers(of: name) : status.keys.sorted()
        for n in ports {
            let portDir = files.portDirectory(hub: name, port: n)
            let disable = SysfsFiles.integer(portDir + "/disable", as: Int.self)
            let child = SysfsPortFiles.child(of: name, port: n)
            var powered: Bool? = status[n].map { $0 & HubRequest.powerBit(superSpeed: hub.isSuperSpeed) != 0 }
            if disable == 1 { powered = false }
            let peer = files.peer(hub: name, port: n)
            hub.ports.append(USBHub.Port(number: n, name: child, powered: powered, hasDisableFile: disable != nil, peer: peer, device: device(child)))
        }
        hub.peer = hub.ports.lazy.compactMap(\.peer).first.flatMap { SysfsPortFiles.upstream(of: $0)?.hub }
        return hub
    }

    /// The ports that have a directory in sysfs, by number.
    private func portNumbers(of hub: String) -> [Int] {
        let names = SysfsFiles.list(files.root + "/" + hub + "/" + SysfsPortFiles.interface(of: hub)) ?? []
        let prefix = hub + "-port"
        return names.compactMap { $0.hasPrefix(prefix) ? Int($0.dropFirst(prefix.count)) : nil }.sorted()
    }

    /// Switches the power of the port `port` (`1-1.4`) on its hub, and of its peer on the
    /// other half of a USB 3 hub: through the port's `disable` where sysfs has it, else the
    /// hub's `PORT_POWER` feature. A hub that switches its ports together or not at all is
    /// refused, by name.
    func setPower(_ port: String, on: Bool) async throws(AccessoryError) -> PortPowerReport {
        guard let up = SysfsPortFiles.upstream(of: port) else {
            throw AccessoryError(.invalidArgument, "'\(port)' is not a port (like 1-1.4 or 1-3)", operation: "power")
        }
        guard let hub = await hub(named: up.hub), hub.ports.contains(where: { $0.number == up.number }) || hub.switching == nil else {
            throw AccessoryError(.notFound, "no hub port \(port) (no hub \(up.hub) with a port \(up.number))", operation: "power")
        }
        if let switching = hub.switching, let refusal = switching.refusal(hub: hub.name) {
            throw AccessoryError(.protocolNotSupported, refusal, operation: "power")
        }
        let thisPort = hub.ports.first { $0.number == up.number }
        if hub.switching == nil && thisPort?.hasDisableFile != true {
            throw AccessoryError(.io, hub.note ?? "cannot tell how hub \(hub.name) switches its ports", operation: "power")
        }
        let method = try await switchOne(hub: hub, number: up.number, on: on)
        var peerName: String?
        if let peer = thisPort?.peer, let peerUp = SysfsPortFiles.upstream(of: peer), let peerHub = await self.hub(named: peerUp.hub) {
            if let switching = peerHub.switching, let refusal = switching.refusal(hub: peerHub.name) {
                throw AccessoryError(.protocolNotSupported, "\(refusal): its USB 3 peer \(hub.name) was switched alone", operation: "power")
            }
            _ = try await switchOne(hub: peerHub, number: peerUp.number, on: on)
            peerName = peer
        }
        return PortPowerReport(port: port, hub: hub.name, on: on, method: method, peer: peerName)
    }

    private func switchOne(hub: USBHub, number n: Int, on: Bool) async throws(AccessoryError) -> PortPowerReport.Method {
        let disable = files.portDirectory(hub: hub.name, port: n) + "/disable"
        if SysfsFiles.exists(disable) {
            try files.write(on ? "0" : "1", to: disable, rule: SysfsPortFiles.disableRule)
            return .disableFile
        }
        let connection = try open(hub.bus, hub.address)
        _ = try await connection.controlTransfer(HubRequest.portPower(n, on: on), .send([]), timeout: Self.timeout)
        return .hubRequest
    }

    /// A logical disconnect and re-enumeration: the device's `authorized` to 0, then (once
    /// it reads 0 and the interfaces are gone, up to 5 s) 1. A kernel deauthorizes within
    /// the write; a slower sysfs (umockdev's, whose simulator may be busy with other
    /// devices) can lack the directory for a moment meanwhile, so the wait is generous.
    func reauthorize(port: String) async throws(AccessoryError) {
        let dir = files.deviceDirectory(port)
        let vendor = SysfsFiles.integer(dir + "/idVendor", radix: 16, as: UInt16.self)
        let rule = SysfsPortFiles.authorizedRule(vendor: vendor)
        guard SysfsFiles.exists(dir + "/authorized") else {
            throw AccessoryError(.notFound, "no device on port \(port)", operation: "reauthorize")
        }
        try files.write("0", to: dir + "/authorized", rule: rule)
        // Deauthorized: the directory lists no interface, and `authorized` reads 0. (A
        // directory that cannot be listed is no answer: it may be on its way out.)
        let deauthorized = {
            guard let entries = SysfsFiles.list(dir), !entries.contains(where: { $0.hasPrefix(port + ":") }) else { return false }
            return SysfsFiles.integer(dir + "/authorized", as: Int.self) == 0
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while !deauthorized() && clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        try files.write("1", to: dir + "/authorized", rule: rule)
    }

    /// Bus, then port chain with numbers compared as numbers (`usb1`, `1-2`, `1-10`).
    static func portOrder(_ a: String, _ b: String) -> Bool {
        func key(_ s: String) -> [Int] {
            if s.hasPrefix("usb") { return [Int(s.dropFirst(3)) ?? 0, -1] }
            return s.split(whereSeparator: { $0 == "-" || $0 == "." }).map { Int($0) ?? 0 }
        }
        return key(a).lexicographicallyPrecedes(key(b))
    }
}
