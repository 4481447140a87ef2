import AccessoryCore
/// Pairs the kernel's and udev's copies of each USB device event as a log streams past,
/// handing events on in log order as soon as no later line can change them.
///
/// A `KERNEL` copy waits for the next `UDEV` copy of the same action and path that comes
/// before another `KERNEL` copy of that action and path (with the same `SEQNUM`, when both
/// have one). It waits at most ``window`` later events: udev's copy follows within a few
/// events in real logs, and the window keeps memory flat on logs of any length. A copy
/// whose partner never comes is kept alone.
struct UdevadmPairing {
    /// How many events a copy waits for its partner before it is handed on alone.
    static let window = 4096

    private struct PairKey: Hashable {
        var action: String
        var devpath: String
    }

    private struct Entry {
        var event: UdevadmEvent
        var paired = false
    }

    /// `entries[head...]` are not yet handed on; `entries[0]` has absolute index `base`.
    private var entries: [Entry] = []
    private var head = 0
    private var base = 0
    /// The latest unpaired KERNEL copy of each action and path, by absolute index.
    private var open: [PairKey: Int] = [:]
    /// Unpaired KERNEL copies by SEQNUM, by absolute index.
    private var bySeqnum: [String: Int] = [:]
    /// Whether the log has ended: nothing waits any more.
    private var finished = false

    /// Takes the next USB device `add` or `remove` of the log.
    mutating func add(_ event: UdevadmEvent) {
        let key = PairKey(action: event.action, devpath: event.devpath)
        let seqnum = event.properties[.seqnum]
        let index = base + entries.count
        switch event.source {
        case .kernel:
            open[key] = index  // an earlier unpaired KERNEL copy stays alone
            if let seqnum { bySeqnum[seqnum] = index }
            entries.append(Entry(event: event))
        case .udev:
            var partner: Int?
            if let seqnum, let i = bySeqnum[seqnum] {
                let other = entries[i - base].event
                if other.action == event.action && other.devpath == event.devpath { partner = i }
            } else if let i = open[key], seqnum == nil || entries[i - base].event.properties[.seqnum] == nil {
                partner = i
            }
            guard let i = partner else {
                entries.append(Entry(event: event, paired: true))
                return
            }
            entries[i - base].event.absorb(event)
            entries[i - base].paired = true
            forget(i)
        }
    }

    /// Ends the log: every waiting copy is handed on as it is.
    mutating func finish() {
        finished = true
    }

    /// The oldest event not yet handed on, once nothing later can pair with it.
    mutating func next() -> UdevadmEvent? {
        guard head < entries.count else { return nil }
        let index = base + head
        if !finished && isWaiting(index) && entries.count - head <= Self.window { return nil }
        forget(index)
        let event = entries[head].event
        head += 1
        if head == entries.count {
            base += head
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            base += head
            head = 0
        }
        return event
    }

    /// Whether the KERNEL copy at `index` can still gain a partner.
    private func isWaiting(_ index: Int) -> Bool {
        let entry = entries[index - base]
        guard !entry.paired, entry.event.source == .kernel else { return false }
        if open[PairKey(action: entry.event.action, devpath: entry.event.devpath)] == index { return true }
        if let s = entry.event.properties[.seqnum], bySeqnum[s] == index { return true }
        return false
    }

    /// Removes the copy at `index` from the maps that find partners.
    private mutating func forget(_ index: Int) {
        let event = entries[index - base].event
        let key = PairKey(action: event.action, devpath: event.devpath)
        if open[key] == index { open[key] = nil }
        if let s = event.properties[.seqnum], bySeqnum[s] == index { bySeqnum[s] = nil }
    }
}
