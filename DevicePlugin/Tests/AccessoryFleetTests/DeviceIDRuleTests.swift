import AccessoryCore
import Testing
@testable import AccessoryFleet

/// An ID names one physical device: it never passes to another, whatever the order in which
/// devices came, their addresses, or a restart of the plugin.
@Suite("Device IDs never move to another device")
struct DeviceIDRuleTests {
    static let loopback = "org.example.loopback"

    private func clone(port: String, address: Int) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: 1, address: address, port: port, vendor: 0x1209, product: 1, serial: "SN1",
                            protocols: [Self.loopback])
    }

    /// A plugin that starts now: a fresh registry fed with `descriptors`, in order, and an
    /// inventory given what is connected then, at once (as the plugin does at its start).
    private func started(with descriptors: [AccessoryDescriptor]) -> (ConnectionRegistry, DeviceInventory) {
        var registry = ConnectionRegistry()
        var inventory = DeviceInventory(protocols: [Self.loopback])
        let events = descriptors.flatMap { registry.apply(.added($0)).events }
        inventory.apply(events)
        return (registry, inventory)
    }

    /// Each healthy ID and the port its device is on.
    private func ports(_ inventory: DeviceInventory) -> [String: String] {
        var out: [String: String] = [:]
        for device in inventory.devices where device.isHealthy {
            out[device.id] = try? inventory.allocation(for: device.id).port
        }
        return out
    }

    @Test("Clones that swap address order across a restart keep their IDs")
    func clonesAcrossRestart() {
        // Before: A on 1-1 (address 5) came first, B on 1-2 (address 6) second.
        let (_, before) = started(with: [clone(port: "1-1", address: 5), clone(port: "1-2", address: 6)])
        // A re-enumerated at a higher address, and the plugin restarted: B comes first now.
        let (_, after) = started(with: [clone(port: "1-2", address: 6), clone(port: "1-1", address: 9)])
        let expected = ["1209-0001-SN1-port-1-1": "1-1", "1209-0001-SN1-port-1-2": "1-2"]
        #expect(ports(before) == expected)
        #expect(ports(after) == expected)
        for inventory in [before, after] {
            #expect(throws: DeviceInventory.AllocationError.unknown("1209-0001-SN1")) {
                try inventory.allocation(for: "1209-0001-SN1")
            }
        }
    }

    @Test("A clone that appears while its serial's ID is held: the ID is withdrawn, never handed to either clone")
    func cloneAppearsLater() throws {
        var registry = ConnectionRegistry()
        var inventory = DeviceInventory(protocols: [Self.loopback])
        func apply(_ event: HotplugEvent) {
            for e in registry.apply(event).events { inventory.apply(e) }
        }
        apply(.added(clone(port: "1-2", address: 6)))  // B alone: its serial names it
        #expect(ports(inventory) == ["1209-0001-SN1": "1-2"])

        apply(.added(clone(port: "1-1", address: 7)))  // A, a clone, arrives
        #expect(ports(inventory) == ["1209-0001-SN1-port-1-1": "1-1", "1209-0001-SN1-port-1-2": "1-2"])
        #expect(inventory.devices.contains(.init(id: "1209-0001-SN1", isHealthy: false)))
        #expect(throws: DeviceInventory.AllocationError.unhealthy("1209-0001-SN1")) {
            try inventory.allocation(for: "1209-0001-SN1")
        }

        // A leaves: B is again the only SN1, and its serial names it again.
        apply(.removed(DeviceRemoval(bus: 1, address: 7, port: "1-1")))
        #expect(ports(inventory) == ["1209-0001-SN1": "1-2"])
        #expect(inventory.devices.contains(.init(id: "1209-0001-SN1-port-1-2", isHealthy: false)))
    }

    @Test("A serial that looks like a port and a device on that port without a serial get different IDs")
    func serialLikeAPort() throws {
        var inventory = DeviceInventory(protocols: [Self.loopback])
        let spoof = AccessoryDescriptor(bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 1, serial: "port-1-2",
                                        protocols: [Self.loopback])
        let plain = AccessoryDescriptor(bus: 1, address: 6, port: "1-2", vendor: 0x1209, product: 1, serial: nil,
                                        protocols: [Self.loopback])
        inventory.apply(.connected(Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: spoof)))
        inventory.apply(.connected(Accessory(connectionID: ConnectionID(rawValue: 2), descriptor: plain)))
        #expect(inventory.devices.count == 2)
        #expect(Set(inventory.devices.map(\.isHealthy)) == [true])
        #expect(try inventory.allocation(for: "1209-0001-port-1-2").serial == nil)
        #expect(DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: "port-1-2"))
                != DeviceID.make(.port(bus: 1, port: "1-2", vendor: 0x1209, product: 1)))
        #expect(DeviceID.make(.clonedSerial(vendor: 1, product: 1, serial: "port", bus: 1, port: "x"))
                != DeviceID.make(.port(bus: 1, port: "port-x", vendor: 1, product: 1)))
    }

    /// What an ID must tell apart: the bus is not part of it (a kernel port name starts with
    /// its bus number).
    private enum Key: Hashable {
        case serial(UInt16, UInt16, String)
        case cloned(UInt16, UInt16, String, String)
        case port(UInt16?, UInt16?, String)

        init(_ identity: PhysicalIdentity) {
            switch identity {
            case .serialNumber(let v, let p, let s): self = .serial(v, p, s)
            case .clonedSerial(let v, let p, let s, _, let port): self = .cloned(v, p, s, port)
            case .port(_, let port, let v, let p): self = .port(v, p, port)
            }
        }
    }

    @Test("Property: distinct identities get distinct IDs, within 63 characters of [A-Za-z0-9._%-]")
    func injective() {
        // Pieces that collide easily: the separator, the escape character, the port marker.
        let serialPieces = ["p", "o", "r", "t", "port", "-", "%", "2D", "%2D", "1", ".", "_", " ", "é", "x", "A"]
        let portPieces = ["1", "2", "-", ".", "port", "p", "%", "2D", "x"]
        var rng = SeededGenerator(seed: 25)
        func text(_ pieces: [String], maxPieces: Int) -> String {
            (0..<Int.random(in: 1...maxPieces, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%-".utf8)
        var owner: [String: Key] = [:]
        var collisions: [String] = []
        for i in 0..<30_000 {
            let vendor = UInt16.random(in: 0...2, using: &rng)
            let product = UInt16.random(in: 0...2, using: &rng)
            // Mostly short (spelled out in full), sometimes long enough to be hashed.
            let maxPieces = i % 10 == 0 ? 40 : 6
            let identity: PhysicalIdentity
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: identity = .serialNumber(vendor: vendor, product: product, serial: text(serialPieces, maxPieces: maxPieces))
            case 1:
                identity = .clonedSerial(vendor: vendor, product: product, serial: text(serialPieces, maxPieces: maxPieces),
                                         bus: 1, port: text(portPieces, maxPieces: maxPieces))
            default:
                identity = .port(bus: 1, port: text(portPieces, maxPieces: maxPieces),
                                 vendor: Bool.random(using: &rng) ? vendor : nil, product: Bool.random(using: &rng) ? product : nil)
            }
            let id = DeviceID.make(identity)
            #expect(id.utf8.count <= DeviceID.maxLength, "\(id)")
            #expect(id.utf8.allSatisfy(allowed.contains), "\(id)")
            let key = Key(identity)
            if let other = owner[id], other != key { collisions.append("\(id): \(other) and \(key)") }
            owner[id] = key
        }
        #expect(collisions.isEmpty, "\(collisions.prefix(5))")
        #expect(owner.count > 10_000)  // the generator makes many distinct identities
    }
}

/// A small seeded generator, so a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
