/// What a reader keeps at most, so that a hostile file costs bounded memory whatever its
/// length, and what it left out on reaching those limits. No real capture comes near them.
package struct USBCaptureLimits: Hashable, Sendable {
    /// The interfaces kept per pcapng section; packets of the later ones are skipped.
    package static let maximumInterfaces = 4096
    /// The devices kept (a bus has at most 127); events of the later ones are skipped.
    package static let maximumDevices = 4096
    /// The endpoints a summary counts, over all devices; events of the later ones are skipped.
    package static let maximumEndpoints = 65536
    /// The submissions waiting for their completion at once; a later one stays unpaired (a
    /// transfer that never completed).
    package static let maximumPendingRequests = 4096

    /// Interfaces past ``maximumInterfaces``, and the packets on them.
    package var interfaces = 0
    package var packets = 0
    /// Events of devices past ``maximumDevices``, or of endpoints past ``maximumEndpoints``.
    package var events = 0
    /// Submissions not tracked because ``maximumPendingRequests`` were waiting.
    package var requests = 0

    /// Nothing was dropped.
    package init() {}

    /// Whether anything was left out.
    package var isEmpty: Bool { self == USBCaptureLimits() }

    /// One sentence per limit reached, saying what was left out; empty when nothing was.
    package var sentences: [String] {
        var s: [String] = []
        if interfaces > 0 {
            s.append("\(interfaces) interface\(plural(interfaces)) past the \(Self.maximumInterfaces) a section may have, and the \(packets) packet\(plural(packets)) on them, were skipped")
        }
        if events > 0 {
            s.append("\(events) event\(plural(events)) of devices past the first \(Self.maximumDevices) (or endpoints past the first \(Self.maximumEndpoints)) were skipped")
        }
        if requests > 0 {
            s.append("\(requests) submission\(plural(requests)) made while \(Self.maximumPendingRequests) were waiting for their completion were left unpaired")
        }
        return s
    }

    private func plural(_ n: Int) -> String { n == 1 ? "" : "s" }
}
