import AccessoryCore

/// A hub as the OS shows it, with how its ports switch power and what is on each port (what
/// `accessoryctl hubs` lists, as `uhubctl` does).
package struct USBHub: Sendable, Hashable {
    /// Its port chain (`1-1`), or `usbN` for a root hub.
    package var name: String
    package var bus: Int
    package var address: Int
    /// The USB version its descriptor gives (`2.00`, `3.00`).
    package var usbVersion: String
    /// How its ports switch power; `nil` when its hub descriptor could not be read (see
    /// ``note``).
    package var switching: PortPowerSwitching?
    /// The other half of a USB 3 hub (its ports' `peer` links), such as `2-1`.
    package var peer: String?
    package var ports: [Port]
    /// Why something is unknown (the hub could not be opened or did not answer).
    package var note: String?

    package init(
        name: String, bus: Int, address: Int, usbVersion: String, switching: PortPowerSwitching?, peer: String? = nil, ports: [Port],
        note: String? = nil
    ) {
        (self.name, self.bus, self.address, self.usbVersion) = (name, bus, address, usbVersion)
        (self.switching, self.peer, self.ports, self.note) = (switching, peer, ports, note)
    }

    /// Whether it is a SuperSpeed hub (USB 3), whose requests and status bits differ.
    package var isSuperSpeed: Bool { usbVersion.hasPrefix("3") }

    /// One downstream port.
    package struct Port: Sendable, Hashable {
        /// The port number on its hub (1…).
        package var number: Int
        /// The port chain of what plugs in there (`1-1.4`), as `accessoryctl power` takes it.
        package var name: String
        /// Whether it is powered; `nil` when unknown.
        package var powered: Bool?
        /// Whether the kernel offers its sysfs `disable` file (Linux 6.0 and later).
        package var hasDisableFile: Bool
        /// The peer port on the other half of a USB 3 hub (`2-1.4`).
        package var peer: String?
        /// The device on it, if any.
        package var device: USBDeviceInfo?

        package init(number: Int, name: String, powered: Bool?, hasDisableFile: Bool, peer: String? = nil, device: USBDeviceInfo? = nil) {
            (self.number, self.name, self.powered, self.hasDisableFile, self.peer, self.device) = (number, name, powered, hasDisableFile, peer, device)
        }
    }
}
