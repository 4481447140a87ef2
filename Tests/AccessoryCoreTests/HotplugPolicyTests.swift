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

    @Test("An instance marked gone is absent while the truth lists it, and forgotten once it does not")
    func goneInstances() {
        var policy = HotplugPolicy()
        policy.markGone(Self.d(5))
        let r1 = policy.withoutGone([Self.d(5), Self.d(6, port: "1-2")], descriptor: { $0 })
        #expect(r1 == [Self.d(6, port: "1-2")])
        #expect(policy.deadInstances.count == 1, "still listed: the mark stays")
        let r2 = policy.withoutGone([Self.d(7)], descriptor: { $0 })
        #expect(r2 == [Self.d(7)], "a new instance at the port is not the dead one")
        #expect(policy.deadInstances.isEmpty, "no longer listed: forgotten")
        policy.markGone(Self.d(5))
        policy.forgetGone()
        let r3 = policy.withoutGone([Self.d(5)], descriptor: { $0 })
        #expect(r3 == [Self.d(5)])
    }

    @Test("A routine look that finds entries missing waits; a confirming look waits again only for entries missing since, at most three times")
    func confirmation() {
        var policy = HotplugPolicy()
        let a: Set<ConnectionID> = [ConnectionID(rawValue: 1)]
        let ab: Set<ConnectionID> = [ConnectionID(rawValue: 1), ConnectionID(rawValue: 2)]
        let r4 = policy.shouldWait(.routine, absent: [], waiting: false, hotplug: true)
        #expect(!r4)
        let r5 = policy.shouldWait(.routine, absent: a, waiting: false, hotplug: false)
        #expect(!r5, "without hotplug nothing waits")
        let r6 = policy.shouldWait(.routine, absent: a, waiting: false, hotplug: true)
        #expect(r6)
        let r7 = policy.shouldWait(.confirming, absent: a, waiting: false, hotplug: true)
        #expect(!r7, "nothing new: evict now")
        let r8 = policy.shouldWait(.routine, absent: a, waiting: false, hotplug: true)
        #expect(r8)
        var waits = 0
        var absent = a
        for n in 2...6 {
            absent.insert(ConnectionID(rawValue: UInt64(n)))
            if policy.shouldWait(.confirming, absent: absent, waiting: false, hotplug: true) { waits += 1 }
        }
        #expect(waits == 3)
        let r9 = policy.shouldWait(.immediate, absent: ab, waiting: false, hotplug: true)
        #expect(!r9)
    }

    @Test("Arrivals: the live instance, a stale one behind a re-enumeration, or nothing known")
    func arrivals() {
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(5)) == .live)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(9)) == .stale)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: Self.d(9, product: 0x0002)) == .unconfirmed)
        #expect(HotplugPolicy.judge(arrival: Self.d(5), livePort: nil) == .unconfirmed)
    }
}
