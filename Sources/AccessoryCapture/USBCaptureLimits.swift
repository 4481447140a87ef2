/// What a reader keeps at most, so that a hostile file costs bounded memory whatever its
/// length. No real capture comes near the ``standard`` limits; tests and the fuzzer use
/// small ones to reach them.
package struct USBCaptureLimits: Hashable, Sendable {
    /// The interfaces kept per pcapng section; packets of the later ones are skipped.
    package var interfaces: Int
    /// The devices kept (a bus has at most 127); events of the later ones are skipped.
    package var devices: Int
    /// The endpoints a summary counts, over all devices; events of the later ones are skipped.
    package var endpoints: Int
    /// The submissions waiting for their completion at once; a later one stays unpaired (a
    /// transfer that never completed).
    package var pendingRequests: Int

    /// These limits.
    package init(interfaces: Int, devices: Int, endpoints: Int, pendingRequests: Int) {
        self.interfaces = interfaces
        self.devices = devices
        self.endpoints = endpoints
        self.pendingRequests = pendingRequests
    }

    /// 4096 interfaces per section, 4096 devices, 65536 endpoints, 4096 pending requests.
    package static let standard = USBCaptureLimits(interfaces: 4096, devices: 4096, endpoints: 65536, pendingRequests: 4096)
}
