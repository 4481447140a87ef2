import AccessoryCore

/// A hotplug notice: a device arrived or left; or news of the whole system, which a host
/// that knows it reports (a replayed trace's records, say).
package struct HotplugNotice: Hashable, Sendable {
    package enum Kind: Hashable, Sendable {
        case arrived, left
        /// The system slept or woke, or the host lost notices: the tracker suspects itself,
        /// and the next look settles it.
        case sleep, wake, overflow
        /// The host's OS truth is whole and authoritative now (a trace's `snapshot`): a full
        /// look in which no instance counts as dead for lagging behind its LEFT event.
        case truth
    }

    package var kind: Kind
    /// What the notice says of the device. A simulated host, or a trace, may not know every
    /// field (an imported log can lack the address); libusb always gives bus, address, port,
    /// VID and PID.
    package var descriptor: AccessoryDescriptor
    /// The host's cached descriptors, speed and configuration, when it has them.
    package var record: USBDeviceRecord?
    /// Whether `descriptor.port` is the kernel's own port chain. libusb builds its chain from
    /// its parent links, which can be shorter when a hub is missing from its list.
    package var portIsExact: Bool
    /// For a LEFT: exactly what to remove, when the host knows it better than `descriptor`
    /// says (a replayed trace's removal, which may lack the port or the address).
    package var removal: DeviceRemoval?
    /// When the source says the notice happened (a recorded trace's `t`), which dates the
    /// links between connections; `nil`: the host's clock.
    package var recordedTime: Duration?

    /// The device as the notice shows it: its descriptor, with the record's class,
    /// descriptors, configuration and speed when the host has them.
    package var device: USBDeviceInfo {
        USBDeviceInfo(
            descriptor: descriptor, deviceClass: record?.device.deviceClass ?? 0, deviceDescriptor: record?.device,
            configuration: record?.configuration, speed: record?.speed)
    }

    /// A libusb notice: every field from the record, the port chain possibly short.
    package init(kind: Kind, device: USBDeviceRecord) {
        self.kind = kind
        self.descriptor = device.accessoryDescriptor
        self.record = device
        self.portIsExact = false
        self.removal = nil
    }

    /// A notice about the whole system (`.sleep`, `.wake`, `.overflow`, `.truth`), about no
    /// device.
    package static func system(_ kind: Kind, recordedTime: Duration?) -> HotplugNotice {
        var notice = HotplugNotice(kind: kind, descriptor: AccessoryDescriptor(bus: 0, address: nil, port: ""))
        notice.recordedTime = recordedTime
        return notice
    }

    /// A notice about a device known only by its descriptor, with an exact port chain.
    package init(kind: Kind, descriptor: AccessoryDescriptor) {
        self.kind = kind
        self.descriptor = descriptor
        self.record = nil
        self.portIsExact = true
        self.removal = nil
    }
}
