import Testing
@testable import AccessoryCore

/// The manager's reconcile planning, as a value: what to scan, how patiently to judge,
/// which entries a look at some ports speaks for, and which kept entries get a fresher view.
@Suite("Reconcile plans")
struct ReconcilePlanTests {
    static let allTriggers: [ReconcileTrigger] = [.initial, .debounced, .periodic, .wake, .noDevice, .refresh, .snapshot, .confirm]

    static func plan(
        _ trigger: ReconcileTrigger, ports: Set<String> = ["1-2", "1-1"], needsFullScan: Bool = false, hotplug: Bool = true,
        tapped: Bool = false
    ) -> ReconcilePlan {
        ReconcilePlan(
            trigger: trigger, touchedPorts: ports, needsFullScan: needsFullScan, isHotplugAvailable: hotplug, isMonitorTapped: tapped)
    }

    @Test("Only a debounced look after events, with hotplug, no suspicion and no tap, reads just the touched ports, in order")
    func partialOnlyWhenDebounced() {
        #expect(Self.plan(.debounced).look == .ports(["1-1", "1-2"]))
        for trigger in Self.allTriggers where trigger != .debounced {
            #expect(Self.plan(trigger).look == .everything, "\(trigger)")
        }
        #expect(Self.plan(.debounced, needsFullScan: true).look == .everything)
        #expect(Self.plan(.debounced, hotplug: false).look == .everything)
        #expect(Self.plan(.debounced, tapped: true).look == .everything)
        #expect(Self.plan(.debounced, ports: []).look == .ports([]))
    }

    @Test("Routine looks wait for LEFT events when hotplug delivers them; initial, wake, refresh and snapshot looks do not")
    func patience() {
        for trigger in [ReconcileTrigger.debounced, .periodic, .confirm, .noDevice] {
            #expect(Self.plan(trigger).isPatient, "\(trigger)")
            #expect(!Self.plan(trigger, hotplug: false).isPatient, "\(trigger)")
        }
        for trigger in [ReconcileTrigger.initial, .wake, .refresh, .snapshot] {
            #expect(!Self.plan(trigger).isPatient, "\(trigger)")
        }
    }

    /// Three accessories on 1-1, 1-2 and 1-3 (addresses 5, 6, 7), and one on root port usb2.
    static func registry() -> (ConnectionRegistry, [Accessory]) {
        var r = ConnectionRegistry()
        let a = [
            r.admit(device(5, port: "1-1")), r.admit(device(6, port: "1-2", serial: "B")),
            r.admit(device(7, port: "1-3", serial: "C")), r.admit(device(bus: 2, 1, port: "usb2", serial: "H")),
        ]
        return (r, a)
    }

    @Test("A full look speaks for every entry")
    func fullScope() {
        let (r, _) = Self.registry()
        #expect(Self.plan(.periodic).scope(truth: [], in: r) == nil)
    }

    @Test("A look at ports speaks for the entries on them (root ports too) and for those whose address a found device has")
    func portScope() {
        let (r, a) = Self.registry()
        #expect(Self.plan(.debounced, ports: ["1-2"]).scope(truth: [], in: r) == [a[1].connectionID])
        #expect(Self.plan(.debounced, ports: ["usb2", "1-9"]).scope(truth: [], in: r) == [a[3].connectionID])
        // A newcomer on 1-2 at 1-3's address: 1-3's entry is in scope too (a ghost elsewhere).
        let newcomer = device(7, port: "1-2", product: 0x0009, serial: "N")
        #expect(Self.plan(.debounced, ports: ["1-2"]).scope(truth: [newcomer], in: r) == [a[1].connectionID, a[2].connectionID])
        #expect(Self.plan(.debounced, ports: []).scope(truth: [], in: r) == [])
    }

    @Test("Kept entries in scope get the scan's device that is the same instance; another instance at the address does not count")
    func refreshes() {
        let (r, a) = Self.registry()
        var renamed = a[0].descriptor
        renamed.manufacturer = "Renamed"  // the same instance, with a string read late
        let stranger = device(6, port: "1-2", product: 0x0009, serial: "X")  // another instance at 1-2's address
        let scan = [(renamed, "fresh 1-1"), (stranger, "stranger"), (a[2].descriptor, "fresh 1-3")]
        let all = ReconcilePlan.refreshes(in: r, scope: nil, scan: scan, descriptor: \.0)
        #expect(all.map(\.accessory.connectionID) == [a[0].connectionID, a[2].connectionID])
        #expect(all.map(\.fresh.1) == ["fresh 1-1", "fresh 1-3"])
        let scoped = ReconcilePlan.refreshes(in: r, scope: [a[2].connectionID, a[1].connectionID], scan: scan, descriptor: \.0)
        #expect(scoped.map(\.fresh.1) == ["fresh 1-3"])
        #expect(ReconcilePlan.refreshes(in: r, scope: [], scan: scan, descriptor: \.0).isEmpty)
    }
}
