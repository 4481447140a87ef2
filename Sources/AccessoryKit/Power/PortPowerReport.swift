/// What switching one port's power did.
package struct PortPowerReport: Sendable, Hashable {
    /// How a port was switched.
    package enum Method: String, Sendable, Hashable {
        /// Its sysfs `disable` file (Linux 6.0 and later; the kernel keeps it off).
        case disableFile = "disable"
        /// The hub's `PORT_POWER` feature, a class request to the hub (power may come back
        /// on by itself when the kernel resumes the port).
        case hubRequest = "PORT_POWER"
    }

    /// The port switched (`1-1.4`).
    package var port: String
    /// The hub it is on.
    package var hub: String
    package var on: Bool
    package var method: Method
    /// The peer port switched with it on the other half of a USB 3 hub.
    package var peer: String?

    package init(port: String, hub: String, on: Bool, method: Method, peer: String? = nil) {
        (self.port, self.hub, self.on, self.method, self.peer) = (port, hub, on, method, peer)
    }
}
