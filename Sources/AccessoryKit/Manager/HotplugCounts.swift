/// How many hotplug notices a manager has taken from its host since it started, hubs
/// included: what `accessory_hotplug_events_total` exports. Counted on the manager's actor,
/// one increment per notice.
package struct HotplugCounts: Sendable, Hashable {
    /// Devices that arrived.
    package var arrived = 0
    /// Devices that left.
    package var left = 0

    package init() {}

    /// Counts `kind` if it is an arrival or a departure.
    mutating func count(_ kind: HotplugNotice.Kind) {
        switch kind {
        case .arrived: arrived &+= 1
        case .left: left &+= 1
        case .sleep, .wake, .overflow, .truth: break
        }
    }
}
