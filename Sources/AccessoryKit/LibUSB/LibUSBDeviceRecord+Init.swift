internal import CLibUSB
import AccessoryCore

extension USBDeviceRecord {
    /// Copies a `libusb_device`'s cached facts.
    /// - Parameter withConfiguration: also copy the active configuration descriptor. Leave
    ///   it off inside a hotplug callback: on some backends it reads the device.
    init?(device: OpaquePointer, withConfiguration: Bool) {
        var d = libusb_device_descriptor()
        guard libusb_get_device_descriptor(device, &d) == 0 else { return nil }
        bus = Int(libusb_get_bus_number(device))
        address = Int(libusb_get_device_address(device))
        var ports = [UInt8](repeating: 0, count: 8)
        let n = ports.withUnsafeMutableBufferPointer { libusb_get_port_numbers(device, $0.baseAddress, Int32($0.count)) }
        portNumbers = n > 0 ? Array(ports[..<Int(n)]) : []
        self.device = USBDeviceDescriptor(
            bcdUSB: d.bcdUSB, deviceClass: d.bDeviceClass, deviceSubclass: d.bDeviceSubClass,
            deviceProtocol: d.bDeviceProtocol, maxPacketSize0: d.bMaxPacketSize0, vendor: d.idVendor,
            product: d.idProduct, bcdDevice: d.bcdDevice, manufacturerIndex: d.iManufacturer,
            productIndex: d.iProduct, serialNumberIndex: d.iSerialNumber, configurationCount: d.bNumConfigurations)
        speed = USBSpeed(libusbSpeed: libusb_get_device_speed(device))
        configuration = withConfiguration ? Self.activeConfiguration(of: device) : nil
    }

    /// The active configuration, converted from libusb's parsed structures.
    static func activeConfiguration(of device: OpaquePointer) -> USBConfiguration? {
        var config: UnsafeMutablePointer<libusb_config_descriptor>?
        guard libusb_get_active_config_descriptor(device, &config) == 0, let config else { return nil }
        defer { libusb_free_config_descriptor(config) }
        let c = config.pointee
        var interfaces: [USBInterface] = []
        for i in 0..<Int(c.bNumInterfaces) {
            guard let interface = c.interface?[i] else { continue }
            for a in 0..<Int(max(interface.num_altsetting, 0)) {
                guard let alt = interface.altsetting?[a] else { continue }
                let endpoints = (0..<Int(alt.bNumEndpoints)).compactMap { e -> USBEndpoint? in
                    guard let ep = alt.endpoint?[e] else { return nil }
                    return USBEndpoint(
                        address: ep.bEndpointAddress, attributes: ep.bmAttributes,
                        maxPacketSize: ep.wMaxPacketSize, interval: ep.bInterval)
                }
                interfaces.append(USBInterface(
                    number: alt.bInterfaceNumber, alternate: alt.bAlternateSetting,
                    interfaceClass: alt.bInterfaceClass, interfaceSubclass: alt.bInterfaceSubClass,
                    interfaceProtocol: alt.bInterfaceProtocol, nameIndex: alt.iInterface,
                    declaredEndpointCount: alt.bNumEndpoints, endpoints: endpoints))
            }
        }
        return USBConfiguration(
            value: c.bConfigurationValue, nameIndex: c.iConfiguration, attributes: c.bmAttributes,
            maxPower: c.MaxPower, declaredInterfaceCount: c.bNumInterfaces, interfaces: interfaces)
    }
}

extension USBSpeed {
    init?(libusbSpeed: Int32) {
        switch libusb_speed(rawValue: UInt32(bitPattern: libusbSpeed)) {
        case LIBUSB_SPEED_LOW: self = .low
        case LIBUSB_SPEED_FULL: self = .full
        case LIBUSB_SPEED_HIGH: self = .high
        case LIBUSB_SPEED_SUPER: self = .superSpeed
        case LIBUSB_SPEED_SUPER_PLUS: self = .superSpeedPlus
        default: return nil
        }
    }
}
