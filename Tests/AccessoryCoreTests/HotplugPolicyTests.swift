import Testing
@testable import AccessoryCore

@Suite("Hotplug policy")
struct HotplugPolicyTests {
    static func d(_ address: Int?, port: String = "1-1", product: UInt16 = 0x0001, protocols: [String]? = nil) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: 1, address: address, port: port, vendor: 0x1209, product: product, serial: "SN1", protocols: protocols)
    }

    @Test("Visibility: hubs only when asked; only supported protocols when some are")
    func visibility() {
        let all = HotplugPolicy()
        #expect(all.isVisible(Self.d(5), isHub: false) && !all.isVisible(Self.d(5), isHub: true))
        #expect(HotplugPolicy(includeHubs: true).isVisible(Self.d(5), isHub: true))
        let some = HotplugPolicy(supportedProtocols: ["a"])
        #expect(some.isVisible(Self.d(5, protocols: ["b", "a"]), isHub: false))
        #expect(!some.isVisible(Self.d(5, protocols: ["b"]), isHub: false) && !some.isVisible(Self.d(5), isHub: false))
    }

    static let t0 = Duration.seconds(100)

    @Test("An instance marked gone is absent while the truth lists it, forgotten once it does not, and for at most deadMarkLifetime")
    func goneInstances() {
        var policy = HotplugPolicy()
        policy.markGone(Self.d(5), at: Self.t0)
        let r1 = policy.withoutGone([Self.d(5), Self.d(6, port: "1-2")], at: Self.t0, descriptor: { $0 })
        #expect(r1 == [Self.d(6, port: "1-2")])
        #expect(policy.deadInstances.count == 1, "still listed: the mark stays")
        let r2 = policy.withoutGone([Self.d(7)], at: Self.t0, descriptor: { $0 })
        #expect(r2 == [Self.d(7)], "a new instance at the port is not the dead one")
        #expect(policy.deadInstances.isEmpty, "no longer listed: forgotten")
        policy.markGone(Self.d(5), at: Self.t0)
        policy.forgetGone()
        let r3 = policy.withoutGone([Self.d(5)], at: Self.t0, descriptor: { $0 })
        #expect(r3 == [Self.d(5)])
        // A mark expires: a false LEFT cannot hide a live instance for good.
        policy.markGone(Self.d(5), at: Self.t0)
        let r4 = policy.withoutGone([Self.d(5)], at: Self.t0 + policy.deadMarkLifetime - .milliseconds(1), descriptor: { $0 })
        #expect(r4.isEmpty)
        let r5 = policy.withoutGone([Self.d(5)], at: Self.t0 + policy.deadMarkLifetime, descriptor: { $0 })
        #expect(r5 == [Self.d(5)], "the mark has expired")
        #expect(policy.deadInstances.isEmpty)
        // An arrival at the address clears its mark: a new instance is there.
        policy.markGone(Self.d(5), at: Self.t0)
        policy.arrived(Self.d(5))
        #expect(policy.withoutGone([Self.d(5)], at: Self.t0, descriptor: { $0 }) == [Self.d(5)])
    }

    static func registry(_ descriptors: [AccessoryDescriptor]) -> (ConnectionRegistry, [ConnectionID]) {
        var registry = ConnectionRegistry()
        let ids = descriptors.map { registry.admit($0).connectionID }
        return (registry, ids)
    }

    @Test("An entry the truth lacks waits leftEventWindow from the first look that missed it, then is evicted; without patience at once")
    func absentEntriesWait() {
        var policy = HotplugPolicy()
        let (registry, ids) = Self.registry([Self.d(5), Self.d(6, port: "1-2")])
        let truth = [Self.d(6, port: "1-2")]
        let j1 = policy.judge(registry, truth: truth, at: Self.t0, patient: true)
        #expect(j1.waiting == [ids[0]] && j1.evict.isEmpty)
        #expect(j1.lookAgainAt == Self.t0 + policy.leftEventWindow)
        // Looks within the window keep it waiting, counted from the first look.
        let j2 = policy.judge(registry, truth: truth, at: Self.t0 + .milliseconds(249), patient: true)
        #expect(j2.waiting == [ids[0]] && j2.lookAgainAt == Self.t0 + policy.leftEventWindow)
        let j3 = policy.judge(registry, truth: truth, at: Self.t0 + .milliseconds(250), patient: true)
        #expect(j3.waiting.isEmpty && j3.evict.keys.sorted() == [ids[0]] && j3.evict[ids[0]] == .some(nil))
        // Listed again before the window ends: the wait is over.
        var back = HotplugPolicy()
        _ = back.judge(registry, truth: truth, at: Self.t0, patient: true)
        let j4 = back.judge(registry, truth: [Self.d(5), Self.d(6, port: "1-2")], at: Self.t0 + .milliseconds(10), patient: true)
        #expect(j4.waiting.isEmpty && j4.evict.isEmpty && j4.lookAgainAt == nil)
        let j5 = back.judge(registry, truth: truth, at: Self.t0 + .milliseconds(20), patient: true)
        #expect(j5.lookAgainAt == Self.t0 + .milliseconds(20) + back.leftEventWindow, "a new absence waits the whole window again")
        var impatient = HotplugPolicy()
        let j6 = impatient.judge(registry, truth: truth, at: Self.t0, patient: false)
        #expect(j6.waiting.isEmpty && j6.evict.keys.sorted() == [ids[0]])
    }

    @Test("A cascade: while LEFT events keep coming, the entries still missing wait on, each wait counted from the last; never beyond leftEventWindowLimit")
    func leftEventsKeepTheWaitsGoing() {
        var policy = HotplugPolicy()
        let ms = { (n: Int64) in Self.t0 + .milliseconds(n) }
        let window = policy.leftEventWindow
        // A hub's unplug: its three devices leave sysfs together; their events trail.
        let (registry, ids) = Self.registry([Self.d(5), Self.d(6, port: "1-2"), Self.d(7, port: "1-3")])
        let j1 = policy.judge(registry, truth: [], at: ms(0), patient: true)
        #expect(j1.waiting == Set(ids) && j1.lookAgainAt == ms(0) + window)
        policy.heardLeft(at: ms(200))  // the first one's event
        let j2 = policy.judge(registry, truth: [], at: ms(250), patient: true)
        #expect(j2.waiting == Set(ids) && j2.evict.isEmpty, "events are flowing: nobody is a ghost yet")
        #expect(j2.lookAgainAt == ms(200) + window)
        let j3 = policy.judge(registry, truth: [], at: ms(450), patient: true)
        #expect(j3.waiting.isEmpty && Set(j3.evict.keys) == Set(ids), "a window with no event: the rest are ghosts")
        // A LEFT before the entry went missing starts nothing: the wait runs from the miss.
        var early = HotplugPolicy()
        early.heardLeft(at: ms(0))
        let j4 = early.judge(registry, truth: [], at: ms(100), patient: true)
        #expect(j4.lookAgainAt == ms(100) + window)
        // A stream of events elsewhere keeps no ghost past the limit.
        var stream = HotplugPolicy()
        _ = stream.judge(registry, truth: [], at: ms(0), patient: true)
        let limit = stream.leftEventWindowLimit
        var at = ms(0)
        while at < ms(0) + limit - .milliseconds(100) {
            at += .milliseconds(100)
            stream.heardLeft(at: at)
            let j = stream.judge(registry, truth: [], at: at, patient: true)
            #expect(j.evict.isEmpty)
            #expect(j.lookAgainAt == min(at + window, ms(0) + limit))
        }
        stream.heardLeft(at: ms(0) + limit)
        #expect(Set(stream.judge(registry, truth: [], at: ms(0) + limit, patient: true).evict.keys) == Set(ids))
        // An impatient look waits for nothing, events or not.
        var impatient = HotplugPolicy()
        impatient.heardLeft(at: ms(0))
        #expect(Set(impatient.judge(registry, truth: [], at: ms(0), patient: false).evict.keys) == Set(ids))
    }

    @Test("A hub's unplug is one unplug: the hub and what is behind it wait a window for each remove event still to come, the deepest first; alone, a window; never beyond the limit")
    func aHubsUnplugWaitsAsOneGroup() {
        let ms = { (n: Int64) in Self.t0 + .milliseconds(n) }
        // A hub on 1-20 with a device on 1-20.1 and a hub on 1-20.7 with a device on 1-20.7.2,
        // and a device on 1-3 that leaves at the same time but is behind no absent hub.
        let ports = ["1-20", "1-20.1", "1-20.7", "1-20.7.2", "1-3"]
        let (registry, ids) = Self.registry(ports.enumerated().map { Self.d(10 + $0.offset, port: $0.element) })
        let byPort = Dictionary(uniqueKeysWithValues: zip(ports, ids))
        let groups = HotplugPolicy.hubGroups(Set(ids), of: registry)
        #expect(groups == [byPort["1-20"]!: 4, byPort["1-20.1"]!: 4, byPort["1-20.7"]!: 4, byPort["1-20.7.2"]!: 4])
        // The inner hub alone with its device: a group of two.
        #expect(HotplugPolicy.hubGroups([byPort["1-20.7"]!, byPort["1-20.7.2"]!, byPort["1-20.1"]!], of: registry)
            == [byPort["1-20.7"]!: 2, byPort["1-20.7.2"]!: 2])
        // Another bus's port of the same name is no ancestor.
        var twoBuses = ConnectionRegistry()
        let a = twoBuses.admit(AccessoryDescriptor(bus: 2, address: 3, port: "2-20", vendor: 0x1209, product: 1, serial: "A")).connectionID
        let b = twoBuses.admit(AccessoryDescriptor(bus: 1, address: 4, port: "1-20.1", vendor: 0x1209, product: 1, serial: "B")).connectionID
        #expect(HotplugPolicy.hubGroups([a, b], of: twoBuses).isEmpty)

        var policy = HotplugPolicy()
        let window = policy.leftEventWindow
        let j1 = policy.judge(registry, truth: [], at: ms(0), patient: true)
        #expect(j1.waiting == Set(ids) && j1.evict.isEmpty)
        // The device alone on 1-3 waits one window; the hub's group four.
        #expect(j1.lookAgainAt == ms(0) + window)
        let j2 = policy.judge(registry, truth: [], at: ms(0) + window, patient: true)
        #expect(j2.evict.keys.sorted() == [byPort["1-3"]!], "alone: a window with no event makes a ghost")
        #expect(j2.waiting == Set(ids).subtracting([byPort["1-3"]!]))
        #expect(j2.lookAgainAt == ms(0) + window * 4)
        // The deepest one's LEFT comes slowly (later than one window): the others wait on,
        // three windows from it.
        var rest = registry
        _ = rest.evict(byPort["1-20.7.2"]!, reason: .unplugged)
        _ = rest.evict(byPort["1-3"]!, reason: .unplugged)
        policy.heardLeft(at: ms(400))
        let j3 = policy.judge(rest, truth: [], at: ms(700), patient: true)
        #expect(j3.evict.isEmpty && j3.lookAgainAt == ms(400) + window * 3)
        // Their events never come: ghosts once the group's windows have passed.
        let j4 = policy.judge(rest, truth: [], at: ms(400) + window * 3, patient: true)
        #expect(Set(j4.evict.keys) == [byPort["1-20"]!, byPort["1-20.1"]!, byPort["1-20.7"]!])
        // A group never waits beyond the limit: 30 entries behind one hub.
        let many = ["1-5"] + (1...29).map { "1-5.\($0 % 7 + 1).\($0)" }
        let (big, bigIDs) = Self.registry(many.enumerated().map { Self.d(40 + $0.offset, port: $0.element) })
        var patient = HotplugPolicy()
        let j5 = patient.judge(big, truth: [], at: ms(0), patient: true)
        #expect(j5.lookAgainAt == ms(0) + patient.leftEventWindowLimit)
        #expect(Set(patient.judge(big, truth: [], at: ms(0) + patient.leftEventWindowLimit, patient: true).evict.keys) == Set(bigIDs))
    }

    @Test("Notices the host holds keep a wait going that is over (any may be the LEFT awaited), a fifth of the window at a time, up to the limit")
    func pendingNoticesKeepTheWaitsGoing() {
        var policy = HotplugPolicy()
        let ms = { (n: Int64) in Self.t0 + .milliseconds(n) }
        let (registry, ids) = Self.registry([Self.d(5)])
        _ = policy.judge(registry, truth: [], at: ms(0), patient: true)
        // Within the window, pending notices change nothing.
        let j1 = policy.judge(registry, truth: [], at: ms(100), patient: true, noticesPending: true)
        #expect(j1.waiting == [ids[0]] && j1.lookAgainAt == ms(0) + policy.leftEventWindow)
        // Past it, they keep the entry a moment longer.
        let j2 = policy.judge(registry, truth: [], at: ms(300), patient: true, noticesPending: true)
        #expect(j2.waiting == [ids[0]] && j2.evict.isEmpty)
        #expect(j2.lookAgainAt == ms(300) + policy.leftEventWindow / 5)
        // Once they are handed in (and were not its LEFT), it is a ghost.
        let j3 = policy.judge(registry, truth: [], at: ms(350), patient: true)
        #expect(j3.evict.keys.sorted() == [ids[0]])
        // Pending for ever: evicted at the limit all the same.
        var held = HotplugPolicy()
        _ = held.judge(registry, truth: [], at: ms(0), patient: true)
        let j4 = held.judge(registry, truth: [], at: ms(0) + held.leftEventWindowLimit, patient: true, noticesPending: true)
        #expect(j4.evict.keys.sorted() == [ids[0]])
    }

    @Test("NO_DEVICE makes an entry suspect: evicted with the operation once the truth lacks it; a false alarm while the truth lists it")
    func noDeviceSuspects() {
        var policy = HotplugPolicy()
        let (registry, ids) = Self.registry([Self.d(5), Self.d(6, port: "1-2")])
        let all = [Self.d(5), Self.d(6, port: "1-2")]
        policy.suspect(ids[0], operation: "bulk OUT 0x01", at: Self.t0)
        policy.suspect(ids[1], operation: "bulk IN 0x81", at: Self.t0)
        // Both still listed: nothing is evicted, a look is due when the wait ends.
        let j1 = policy.judge(registry, truth: all, at: Self.t0 + .milliseconds(10), patient: true)
        #expect(j1.evict.isEmpty && j1.waiting.isEmpty && j1.falseAlarms.isEmpty)
        #expect(j1.lookAgainAt == Self.t0 + policy.leftEventWindow)
        // The first leaves sysfs: it waits for its LEFT event from then on.
        let truth = [Self.d(6, port: "1-2")]
        let j2 = policy.judge(registry, truth: truth, at: Self.t0 + .milliseconds(100), patient: true)
        #expect(j2.waiting == [ids[0]])
        // The second is still listed after the whole wait: a false alarm, and it stays.
        let j3 = policy.judge(registry, truth: truth, at: Self.t0 + .milliseconds(300), patient: true)
        #expect(j3.falseAlarms == [ids[1]: "bulk IN 0x81"] && j3.evict.isEmpty)
        // The first, with no LEFT event, is a ghost whose evidence names the operation.
        let j4 = policy.judge(registry, truth: truth, at: Self.t0 + .milliseconds(350), patient: true)
        #expect(j4.evict.keys.sorted() == [ids[0]] && j4.evict[ids[0]] == .some("bulk OUT 0x01"))
        #expect(j4.falseAlarms.isEmpty, "a false alarm is reported once")
    }

    @Test("The truth a waiting reconcile uses keeps the waiting entries and defers devices that would take their port or address")
    func waitingTruth() {
        let (registry, ids) = Self.registry([Self.d(5), Self.d(6, port: "1-2")])
        let replug = Self.d(9)  // the same port under a new address
        let reused = Self.d(5, port: "1-3", product: 0x0002)  // the waiting entry's address on another port
        let other = Self.d(7, port: "1-4")
        let truth = HotplugPolicy.truth([replug, reused, other, Self.d(6, port: "1-2")], keeping: [ids[0]], of: registry)
        #expect(Set(truth) == [Self.d(5), other, Self.d(6, port: "1-2")])
        #expect(HotplugPolicy.truth([other], keeping: [], of: registry) == [other])
    }

    @Test("Arrivals: the live instance, a stale one behind a re-enumeration, or nothing known")
    func arrivals() {
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(5)) == .live)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(9)) == .stale)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(9, product: 0x0002)) == .unconfirmed)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: nil) == .unconfirmed)
    }

    @Test("A skipped arrival's LEFT is awaited once, until a live instance takes the address; the memory is bounded")
    func skippedArrivals() {
        var policy = HotplugPolicy()
        let r1 = policy.isLeftOfSkippedArrival(Self.d(5))
        #expect(!r1, "nothing skipped: an unknown LEFT stays suspicious")
        policy.skipped(Self.d(5))
        let r2 = policy.isLeftOfSkippedArrival(Self.d(6))
        #expect(!r2)
        let r3 = policy.isLeftOfSkippedArrival(Self.d(5))
        #expect(r3)
        let r4 = policy.isLeftOfSkippedArrival(Self.d(5))
        #expect(!r4, "awaited once")
        policy.skipped(Self.d(7))
        policy.arrived(Self.d(7))
        let r5 = policy.isLeftOfSkippedArrival(Self.d(7))
        #expect(!r5, "a live instance at the address ends the wait")
        for a in 0..<HotplugPolicy.skippedArrivalLimit { policy.skipped(AccessoryDescriptor(bus: 2, address: a, port: "2-1")) }
        policy.skipped(Self.d(8))
        let r6 = policy.isLeftOfSkippedArrival(AccessoryDescriptor(bus: 2, address: 0, port: "2-1"))
        #expect(!r6, "past the limit, what was remembered is forgotten")
        let r7 = policy.isLeftOfSkippedArrival(Self.d(8))
        #expect(r7)
    }
}
