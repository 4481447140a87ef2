import AccessoryCore

extension USBDeviceInfo {
    /// The usbfs node, `/dev/bus/usb/BBB/DDD`, when the address is known.
    package var devicePath: String? {
        descriptor.address.map { DeviceNode.path(bus: descriptor.bus, address: $0) }
    }
}
