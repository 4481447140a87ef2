import Testing
@testable import AccessoryCore

/// Re-enumeration links: a connection names the one it continues (the trace format's `previous`).
@Suite("Re-enumeration links")
struct LinkTests {
    /// Applies events at the given times and returns the connections made, in order.
    private func connections(_ registry: inout ConnectionRegistry, _ timed: [(Double, HotplugEvent)]) -> [Accessory] {
        timed.flatMap { t, event in
            registry.now = .seconds(t)
            return registry.apply(event).events.compactMap { if case .connected(let a) = $0 { a } else { nil } }
        }
    }

    @Test("A replug on the same port within 5 s links; after 5 s it does not")
    func window() {
        var r = ConnectionRegistry()
        let c = connections(&r, [
            (0, .added(device(5))), (1, removal(5)), (1.5, .added(device(6))),
            (2, removal(6)), (7.01, .added(device(7))),
        ])
        #expect(c.map(\.previousConnectionID?.rawValue) == [nil, 1, nil])
    }

    @Test("Another accessory on the port does not link; the same one with its serial unknown does")
    func identity() {
        var r = ConnectionRegistry()
        let c = connections(&r, [
            (0, .added(device(5))), (1, removal(5)), (1.1, .added(device(6, product: 0x0002, serial: "X"))),
            (2, removal(6)), (2.1, .added(device(7, product: 0x0002, serial: nil))),
        ])
        #expect(c.map(\.previousConnectionID?.rawValue) == [nil, nil, 2])
    }

    @Test("A mode switch the owner announced links whatever the new IDs, once")
    func modeSwitch() throws {
        var r = ConnectionRegistry()
        let phone = try firstOf(connections(&r, [(0, .added(device(5, vendor: 0x18d1, product: 0x4ee7, serial: "P")))]))
        r.expectModeSwitch(of: phone.connectionID, until: .seconds(10))
        let c = connections(&r, [
            (1, removal(5)), (1.05, .added(device(6, vendor: 0x18d1, product: 0x2d01, serial: "P"))),
            (2, removal(6)), (2.05, .added(device(7, vendor: 0x18d1, product: 0x4ee7, serial: "P"))),
        ])
        #expect(c.map(\.previousConnectionID) == [phone.connectionID, nil])
    }

    @Test("A mode switch's mark ends with its owner's wait: by its deadline, or when the owner ends it, before or after the connection ends")
    func modeSwitchMarkEnds() throws {
        // Nothing re-enumerated within the wait: hours later, another device on the port
        // within 5 s of the unplug is not linked.
        var r = ConnectionRegistry()
        let phone = try firstOf(connections(&r, [(0, .added(device(5, serial: "P")))]))
        r.expectModeSwitch(of: phone.connectionID, until: .seconds(10))
        var c = connections(&r, [(3600, removal(5)), (3601, .added(device(6, product: 0x0009, serial: "OTHER")))])
        #expect(c.map(\.previousConnectionID) == [nil])

        // It ended within the wait, but its successor came after the deadline.
        r = ConnectionRegistry()
        let second = try firstOf(connections(&r, [(0, .added(device(5, serial: "P")))]))
        r.expectModeSwitch(of: second.connectionID, until: .seconds(2))
        c = connections(&r, [(1.5, removal(5)), (3, .added(device(6, product: 0x0009, serial: "OTHER")))])
        #expect(c.map(\.previousConnectionID) == [nil])

        // Ended by its owner while connected, and after the connection ended.
        for endsAfterUnplug in [false, true] {
            r = ConnectionRegistry()
            let third = try firstOf(connections(&r, [(0, .added(device(5, serial: "P")))]))
            r.expectModeSwitch(of: third.connectionID, until: .seconds(100))
            if !endsAfterUnplug { r.endModeSwitch(of: third.connectionID) }
            _ = connections(&r, [(1, removal(5))])
            if endsAfterUnplug { r.endModeSwitch(of: third.connectionID) }
            c = connections(&r, [(1.5, .added(device(6, product: 0x0009, serial: "OTHER")))])
            #expect(c.map(\.previousConnectionID) == [nil], "ended \(endsAfterUnplug ? "after" : "before") the unplug")
        }
    }

    @Test("A phone back in accessory mode with its serial links without an announcement; another serial does not")
    func accessoryModeSignature() {
        var r = ConnectionRegistry()
        let c = connections(&r, [
            (0, .added(device(5, vendor: 0x04e8, product: 0x6860, serial: "P"))), (1, removal(5)),
            (1.1, .added(device(6, vendor: 0x18d1, product: 0x2d01, serial: "P"))),
            (2, .added(device(7, port: "1-2", vendor: 0x04e8, product: 0x6860, serial: "Q"))), (3, removal(7, port: "1-2")),
            (3.1, .added(device(8, port: "1-2", vendor: 0x18d1, product: 0x2d01, serial: "OTHER"))),
        ])
        #expect(c.map(\.previousConnectionID?.rawValue) == [nil, 1, nil, nil])
    }

    @Test("The eight-hours case: the fresh connection after a ghost eviction names the ghost")
    func ghost() throws {
        var r = ConnectionRegistry()
        _ = connections(&r, [(0, .added(device(5)))])
        r.now = .seconds(8 * 3600)
        let events = Reconciler().reconcile(&r, against: [device(9)]).events
        try #require(events.count == 2)
        guard case .disconnected(let ghost, .ghostEvicted) = events[0], case .connected(let fresh) = events[1] else {
            Issue.record("want an eviction then an admission, got \(events)")
            return
        }
        #expect(fresh.previousConnectionID == ghost.connectionID)
    }

    @Test("A hidden connection is never named, a shutdown leaves nothing to link, and a promotion keeps the link")
    func hiddenAndShutdown() {
        var r = ConnectionRegistry()
        let hub = r.admit(device(5), shown: false)
        _ = r.evict(hub.connectionID, reason: .unplugged)
        #expect(r.admit(device(6)).previousConnectionID == nil)

        var s = ConnectionRegistry()
        _ = s.admit(device(5))
        _ = s.shutdown()
        #expect(s.admit(device(6)).previousConnectionID == nil)

        var p = ConnectionRegistry()
        let first = p.admit(device(5))
        _ = p.evict(first.connectionID, reason: .unplugged)
        let hidden = p.admit(device(6), shown: false)
        #expect(hidden.previousConnectionID == first.connectionID)
        #expect(p.promote(hidden.connectionID)?.previousConnectionID == first.connectionID)
    }

    @Test("A link is used once: after the connection that continued it is shut down, a newcomer on the port links to nothing")
    func linkUsedOnce() {
        var r = ConnectionRegistry()
        let first = r.admit(device(5))
        _ = r.evict(first.connectionID, reason: .unplugged)
        #expect(r.admit(device(6)).previousConnectionID == first.connectionID)
        _ = r.shutdown()
        #expect(r.admit(device(7)).previousConnectionID == nil, "a second link to one ended connection")
    }
}
