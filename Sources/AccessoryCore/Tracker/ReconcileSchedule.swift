/// When the tracker looks at the OS truth, as a state machine with no clock:
/// ``AccessoryTracker`` tells it what happened (``Event``) and at what time, and asks it what
/// is due (``Action``) at a time, then turns each action into a ``ReconcilePlan``. The
/// tracker's driver (the manager) reads the time and arms one timer for
/// ``AccessoryTracker/nextDeadline``, which is this schedule's ``nextDeadline``.
///
/// There is one pending reconcile at most (the earliest asked for wins, with its trigger)
/// and one periodic tick, every `interval` after the last. Hotplug events name the ports the
/// next reconcile reads; a suspicion makes it read everything.
package struct ReconcileSchedule: Sendable {
    /// What the tracker tells the schedule.
    package enum Event: Sendable, Equatable {
        /// A hotplug event named these ports: a reconcile after the debounce reads them.
        case hotplug(ports: [String])
        /// Something may have changed that no event named (the registry suspects it is out
        /// of step, a reset): a reconcile after the debounce reads everything.
        case suspicion
        /// An operation found a device gone: a `noDevice` reconcile after the debounce.
        case noDevice
        /// A wait for a LEFT event (or a NO_DEVICE's) ends at `at`: look again then.
        case confirm(at: Duration)
    }

    /// What is due.
    package enum Action: Sendable, Equatable {
        /// Reconcile, for this reason.
        case reconcile(ReconcileTrigger)
        /// The periodic tick: look for a system sleep, then reconcile.
        case tick
    }

    /// The pending reconcile: when it falls due and why.
    package private(set) var pending: (at: Duration, trigger: ReconcileTrigger)?
    /// When the periodic tick falls due.
    package private(set) var nextTick: Duration
    /// The ports hotplug events named since the last reconcile.
    package var touchedPorts: Set<String> { Set(touchedNames.lazy.map(\.name)) }
    /// ``touchedPorts``, each hashed by its bytes (``TableHash``) rather than SipHash: a
    /// port is added at every hotplug event.
    private var touchedNames: Set<PortName> = []

    /// A port chain, as a set element with a cheap hash.
    private struct PortName: Hashable, Sendable {
        var name: String

        func _rawHashValue(seed: Int) -> Int { TableHash.word(0, name, seed: seed) }
    }
    /// Whether the next reconcile must read everything.
    package private(set) var needsFullScan = false
    private let interval: Duration
    private let debounce: Duration

    /// A schedule whose first tick falls due `interval` after `now`.
    package init(now: Duration, interval: Duration, debounce: Duration) {
        self.interval = interval
        self.debounce = debounce
        nextTick = now + interval
    }

    /// The earliest time at which something falls due.
    package var nextDeadline: Duration { min(pending?.at ?? nextTick, nextTick) }

    /// Takes in what happened at `now`.
    package mutating func receive(_ event: Event, at now: Duration) {
        switch event {
        case .hotplug(let ports):
            for port in ports { touchedNames.insert(PortName(name: port)) }
            request(.debounced, at: now + debounce, now: now)
        case .suspicion:
            needsFullScan = true
            request(.debounced, at: now + debounce, now: now)
        case .noDevice:
            request(.noDevice, at: now + debounce, now: now)
        case .confirm(let at):
            request(.confirm, at: at, now: now)
        }
    }

    /// A hotplug event named `port`: ``receive(_:at:)`` with `.hotplug(ports: [port])`, with
    /// no array.
    package mutating func touched(_ port: String, at now: Duration) {
        touchedNames.insert(PortName(name: port))
        request(.debounced, at: now + debounce, now: now)
    }

    /// The next action due by `now`, in time order (a reconcile due no later than the tick
    /// first), or `nil` when nothing is. Call it until it says `nil`.
    package mutating func due(at now: Duration) -> Action? {
        if let p = pending, p.at <= now, p.at <= nextTick {
            pending = nil
            return .reconcile(p.trigger)
        }
        if nextTick <= now {
            // The tick's own reconcile replaces nothing pending: the next tick is counted
            // from this one, and a pending reconcile keeps its time.
            nextTick = now + interval
            return .tick
        }
        return nil
    }

    /// A reconcile planned from ``touchedPorts`` and ``needsFullScan`` begins: the touched
    /// ports are its to read, and a full scan is no longer needed once it reads everything.
    package mutating func reconcileBegan(readingEverything: Bool) {
        touchedNames.removeAll(keepingCapacity: true)  // the next events name as many ports again
        if readingEverything { needsFullScan = false }
    }

    /// Asks for a reconcile at `at` (never before `now`) unless one is pending that falls
    /// due no later.
    private mutating func request(_ trigger: ReconcileTrigger, at: Duration, now: Duration) {
        let due = max(at, now)
        if let p = pending, p.at <= due { return }
        pending = (due, trigger)
    }
}
