import Testing
@testable import AccessoryCore

/// A reconcile that looked at some ports only (the farm's debounced reconcile after events).
@Suite("Scoped reconciles")
struct ScopedReconcileTests {
    /// Three accessories on 1-1, 1-2 and 1-3.
    private func registry() -> (ConnectionRegistry, [Accessory]) {
        var r = ConnectionRegistry()
        let a = [r.admit(device(5, port: "1-1")), r.admit(device(6, port: "1-2", serial: "B")), r.admit(device(7, port: "1-3", serial: "C"))]
        return (r, a)
    }

    @Test("Entries outside the scope are kept although the partial truth lacks them; one in it that is gone is evicted")
    func outsideIsKept() {
        var (r, a) = registry()
        // A look at port 1-2 only, which is empty now.
        let report = Reconciler().reconcile(&r, against: [], scope: [a[1].connectionID])
        #expect(report.events.count == 1)
        #expect(report.events.first?.reason == .ghostEvicted(.absentFromSnapshot))
        #expect(r.accessories.map(\.connectionID) == [a[0].connectionID, a[2].connectionID])
    }

    @Test("A device found on a looked-at port at an address an entry elsewhere holds evicts that entry as reused")
    func addressReusedElsewhere() {
        var (r, a) = registry()
        let newcomer = device(7, port: "1-2", product: 0x0009, serial: "N")   // address 7 was 1-3's
        let scope: Set<ConnectionID> = [a[1].connectionID, a[2].connectionID]
        let report = Reconciler().reconcile(&r, against: [newcomer], scope: scope)
        let evicted = report.events.compactMap { e -> (UInt64, DisconnectReason)? in
            if case .disconnected(let x, let reason) = e { (x.connectionID.rawValue, reason) } else { nil }
        }
        #expect(Set(evicted.map(\.0)) == [a[1].connectionID.rawValue, a[2].connectionID.rawValue])
        #expect(evicted.contains { $0.0 == a[2].connectionID.rawValue && $0.1 == .ghostEvicted(.addressReused(by: newcomer)) })
        #expect(r.accessories.map(\.descriptor.port) == ["1-1", "1-2"])
    }

    @Test("A scoped reconcile leaves the registry suspect; a whole one clears it")
    func suspicionNeedsAWholeLook() {
        var (r, a) = registry()
        _ = r.apply(removal(40, port: "1-9"))   // an unknown device: suspicion, tombstone
        #expect(r.isSuspect)
        _ = Reconciler().reconcile(&r, against: [a[0].descriptor], scope: [a[0].connectionID])
        #expect(r.isSuspect)
        _ = Reconciler().reconcile(&r, against: a.map(\.descriptor))
        #expect(!r.isSuspect)
    }

    @Test("The policy judges only the scope: an entry waiting elsewhere keeps waiting, and its suspicion is not called false")
    func judgeScope() {
        let (r, a) = registry()
        var policy = HotplugPolicy()
        // 1-3 is missing from a whole look: it waits for its LEFT event.
        let first = policy.judge(r, truth: [a[0].descriptor, a[1].descriptor], at: .zero, patient: true)
        #expect(first.waiting == [a[2].connectionID])
        policy.suspect(a[1].connectionID, operation: "bulk IN 0x81", at: .zero)
        // A look at 1-1 only, 300 ms later: nothing about 1-2 or 1-3 is decided.
        let scoped = policy.judge(r, truth: [a[0].descriptor], at: .milliseconds(300), patient: true, scope: [a[0].connectionID])
        #expect(scoped.evict.isEmpty && scoped.falseAlarms.isEmpty && scoped.waiting.isEmpty)
        // A whole look then: 1-3 has waited past the window (evicted), 1-2's NO_DEVICE was false.
        let whole = policy.judge(r, truth: [a[0].descriptor, a[1].descriptor], at: .milliseconds(300), patient: true)
        #expect(Set(whole.evict.keys) == [a[2].connectionID])
        #expect(whole.falseAlarms[a[1].connectionID] == "bulk IN 0x81")
    }
}
