import AccessoryCore

/// The devices and endpoints behind one USB host controller, against the limits farms run
/// into: some xHCI hosts give out about 32 device slots (STF #966: phones beyond that never
/// enumerate), and Intel's xHCI about 96 endpoints (uhubctl #276: devices enumerate but fail
/// to configure). Hubs count: each takes a slot and an interrupt endpoint.
package struct HostControllerLoad: Hashable, Sendable {
    /// The controller's PCI (or platform) device name, such as `0000:00:14.0`.
    package var controller: String
    /// Its kernel driver, such as `xhci_hcd`, when sysfs names one.
    package var driver: String?
    /// The USB buses (root hubs) it drives.
    package var buses: [Int]
    /// Devices behind it, hubs included, root hubs not.
    package var devices: Int
    /// Endpoints of their active configurations (alternate setting 0), each device's
    /// control endpoint included.
    package var endpoints: Int

    package static let deviceSlotLimit = 32
    package static let endpointLimit = 96
    /// A controller is "near" a limit from this share of it.
    package static let warningShare = 0.8

    /// Whether the limits apply: they are xHCI's.
    package var isXHCI: Bool { driver?.contains("xhci") ?? false }

    /// What is close to a limit, in words; empty when nothing is.
    package var concerns: [String] {
        guard isXHCI else { return [] }
        var out: [String] = []
        if Double(devices) >= Double(Self.deviceSlotLimit) * Self.warningShare {
            out.append("\(devices) devices, near the \(Self.deviceSlotLimit) device slots some xHCI hosts have (STF #966)")
        }
        if Double(endpoints) >= Double(Self.endpointLimit) * Self.warningShare {
            out.append("\(endpoints) endpoints, near the \(Self.endpointLimit) an Intel xHCI host can schedule (uhubctl #276)")
        }
        return out
    }

    /// The load of every controller that `devices` (a scan with hubs) shows, by controller
    /// name. Root hubs (`usbN`) say which controller a bus belongs to.
    package static func measure(_ devices: [USBDeviceInfo], sysfsRoot: String) -> [HostControllerLoad] {
        var byBus: [Int: (controller: String, driver: String?)] = [:]
        for info in devices where info.descriptor.port.hasPrefix("usb") {
            let name = info.descriptor.port
            // usbN -> ../../../devices/pci0000:00/0000:00:14.0/usbN: the component before usbN.
            let target = SysfsFiles.link(sysfsRoot + "/" + name) ?? ""
            let parts = target.split(separator: "/").map(String.init)
            let controller = parts.count >= 2 ? parts[parts.count - 2] : "bus \(info.descriptor.bus)"
            let driver = SysfsFiles.linkTarget(sysfsRoot + "/" + name + "/../driver").flatMap { $0.split(separator: "/").last.map(String.init) }
            byBus[info.descriptor.bus] = (controller, driver)
        }
        var loads: [String: HostControllerLoad] = [:]
        for info in devices {
            let bus = info.descriptor.bus
            let owner = byBus[bus] ?? ("bus \(bus)", nil)
            var load = loads[owner.controller] ?? HostControllerLoad(controller: owner.controller, driver: owner.driver, buses: [], devices: 0, endpoints: 0)
            if !load.buses.contains(bus) { load.buses.append(bus) }
            if !info.descriptor.port.hasPrefix("usb") {
                load.devices += 1
                let interfaces = (info.configuration?.interfaces ?? []).filter { $0.alternate == 0 }
                load.endpoints += 1 + interfaces.reduce(0) { $0 + $1.endpoints.count }
            }
            loads[owner.controller] = load
        }
        return loads.values.map { var l = $0; l.buses.sort(); return l }.sorted { $0.controller < $1.controller }
    }
}
