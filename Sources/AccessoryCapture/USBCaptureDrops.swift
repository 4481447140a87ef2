/// What a reader left out on reaching its ``USBCaptureLimits`` (a hostile file): counts, and
/// a sentence for each limit reached.
package struct USBCaptureDrops: Hashable, Sendable {
    /// The limits that applied.
    package var limits: USBCaptureLimits
    /// Interfaces past the limit in their section, and the packets on them.
    package var interfaces = 0
    package var packets = 0
    /// Events of devices past the limit, or of endpoints past it.
    package var events = 0
    /// Submissions left unpaired because the limit of pending ones was reached.
    package var requests = 0

    /// Nothing dropped yet, under `limits`.
    package init(limits: USBCaptureLimits) {
        self.limits = limits
    }

    /// Whether nothing was left out.
    package var isEmpty: Bool { interfaces == 0 && packets == 0 && events == 0 && requests == 0 }

    /// One sentence per limit reached, saying what was left out; empty when nothing was.
    package var sentences: [String] {
        var s: [String] = []
        if interfaces > 0 {
            s.append(
                "\(count(interfaces, "interface")) past the \(limits.interfaces) a section may have, and the \(count(packets, "packet")) on them, were skipped")
        }
        if events > 0 {
            s.append("\(count(events, "event")) of devices past the first \(limits.devices) (or endpoints past the first \(limits.endpoints)) were skipped")
        }
        if requests > 0 {
            s.append("\(count(requests, "submission")) made while \(limits.pendingRequests) were waiting for their completion were left unpaired")
        }
        return s
    }

    private func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
