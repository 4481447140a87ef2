import AccessoryCore
import Testing
@testable import AccessoryFleet

@Suite("What a device plugin advertises")
struct DeviceInventoryTests {
    static let loopback = "org.example.loopback"

    private func descriptor(_ serial: String?, port: String, address: Int, bus: Int = 1, product: UInt16 = 1,
                            protocols: [String] = [loopback]) -> AccessoryDescriptor {
        AccessoryDescriptor(bus: bus, address: address, port: port, vendor: 0x1209, product: product, serial: serial,
                            protocols: protocols)
    }

    @Test("IDs are physical identities: VID-PID-SERIAL, the port without a serial, both for a cloned serial")
    func ids() {
        #expect(DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: "SN1")) == "1209-0001-SN1")
        #expect(DeviceID.make(.port(bus: 2, port: "2-3", vendor: 0x1209, product: 2)) == "1209-0002-port-2-3")
        #expect(DeviceID.make(.clonedSerial(vendor: 0x1209, product: 1, serial: "SN1", bus: 1, port: "1-1.4"))
                == "1209-0001-SN1-port-1-1.4")
        // Other bytes are escaped, so distinct serials stay distinct and IDs stay plain.
        #expect(DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: "A B/é")) == "1209-0001-A%20B%2F%C3%A9")
        #expect(DeviceID.make(.serialNumber(vendor: 1, product: 1, serial: "A_B")) != DeviceID.make(.serialNumber(vendor: 1, product: 1, serial: "A B")))
    }

    @Test("An ID is at most 63 characters, as the kubelet requires, and long serials stay distinct")
    func longIDs() {
        let long1 = String(repeating: "X", count: 100) + "1"
        let long2 = String(repeating: "X", count: 100) + "2"
        let a = DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: long1))
        let b = DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: long2))
        #expect(a.count <= 63 && b.count <= 63)
        #expect(a != b)
        #expect(a == DeviceID.make(.serialNumber(vendor: 0x1209, product: 1, serial: long1)))
        #expect(a.hasPrefix("1209-0001-XXXX"))
    }

    @Test("Recovered: unhealthy under its ID while the recovery runs, healthy again under the same ID when the connection that continues it comes back, serial or not")
    func recoveredAndBack() throws {
        for serial in ["HEAL", nil] {
            var inventory = DeviceInventory(protocols: [Self.loopback])
            let old = Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: descriptor(serial, port: "1-4.2", address: 5))
            inventory.apply(.connected(old))
            let id = try #require(inventory.devices.first?.id)
            let ended = inventory.apply(.disconnected(old, .recovered(.powerCycle)))
            #expect(ended)
            #expect(inventory.devices == [.init(id: id, isHealthy: false)])
            #expect(throws: DeviceInventory.AllocationError.unhealthy(id)) { try inventory.allocation(for: id) }
            let back = Accessory(
                connectionID: ConnectionID(rawValue: 2), descriptor: descriptor(serial, port: "1-4.2", address: 9),
                previousConnectionID: old.connectionID)
            let returned = inventory.apply(.connected(back))
            #expect(returned)
            #expect(inventory.devices == [.init(id: id, isHealthy: true)], "\(String(describing: serial))")
            #expect(try inventory.allocation(for: id).devicePath == "/dev/bus/usb/001/009")
        }
    }

    @Test("Unplugged: stays listed, unhealthy; back under the same ID with its new node")
    func unplugAndReturn() throws {
        var registry = ConnectionRegistry()
        var inventory = DeviceInventory(protocols: [Self.loopback])
        func apply(_ event: HotplugEvent) -> Bool {
            registry.apply(event).events.map { inventory.apply($0) }.contains(true)
        }
        #expect(apply(.added(descriptor("SN1", port: "1-1", address: 5))))
        #expect(apply(.added(descriptor("SN2", port: "1-2", address: 6, product: 2))))
        #expect(inventory.devices == [.init(id: "1209-0001-SN1", isHealthy: true), .init(id: "1209-0002-SN2", isHealthy: true)])
        #expect(try inventory.allocation(for: "1209-0001-SN1").devicePath == "/dev/bus/usb/001/005")

        #expect(apply(.removed(DeviceRemoval(bus: 1, address: 5, port: "1-1"))))
        #expect(inventory.devices.first == .init(id: "1209-0001-SN1", isHealthy: false))
        #expect(throws: DeviceInventory.AllocationError.unhealthy("1209-0001-SN1")) { try inventory.allocation(for: "1209-0001-SN1") }
        #expect(throws: DeviceInventory.AllocationError.unknown("nope")) { try inventory.allocation(for: "nope") }

        // Back on another port under a new address: same ID, healthy, the new node.
        #expect(apply(.added(descriptor("SN1", port: "1-3", address: 9))))
        #expect(inventory.devices.first == .init(id: "1209-0001-SN1", isHealthy: true))
        let allocation = try inventory.allocation(for: "1209-0001-SN1")
        #expect(allocation.devicePath == "/dev/bus/usb/001/009")
        #expect(allocation.port == "1-3")
        #expect(allocation.connectionID == ConnectionID(rawValue: 3))
    }

    @Test("A ghost evicted counts as leaving; a silent re-enumeration keeps the device healthy with the new node")
    func ghostsAndReenumeration() throws {
        var registry = ConnectionRegistry()
        var inventory = DeviceInventory(protocols: [Self.loopback])
        for e in registry.apply(.added(descriptor("SN1", port: "1-1", address: 5))).events { inventory.apply(e) }
        // The reconciler finds the accessory re-enumerated under address 7, with no events.
        let report = Reconciler().reconcile(&registry, against: [descriptor("SN1", port: "1-1", address: 7)])
        var healthSeen: [Bool] = []
        for e in report.events {
            inventory.apply(e)
            healthSeen.append(inventory.devices.first!.isHealthy)
        }
        #expect(healthSeen == [false, true])  // the ghost's eviction, then the new instance
        #expect(try inventory.allocation(for: "1209-0001-SN1").devicePath == "/dev/bus/usb/001/007")

        // A ghost with nothing in its place: unhealthy.
        for e in Reconciler().reconcile(&registry, against: []).events { inventory.apply(e) }
        #expect(inventory.devices == [.init(id: "1209-0001-SN1", isHealthy: false)])
    }

    @Test("Only the protocols asked for; a cloned serial gets an ID of its own")
    func protocolsAndClones() {
        var registry = ConnectionRegistry()
        var inventory = DeviceInventory(protocols: [Self.loopback])
        for d in [descriptor("SN1", port: "1-1", address: 5), descriptor("SN1", port: "1-2", address: 6),
                  descriptor("K1", port: "1-3", address: 7, protocols: ["com.example.other"])] {
            for e in registry.apply(.added(d)).events { inventory.apply(e) }
        }
        // Both clones by port, never "the first one" by serial alone: the serial's ID, given
        // while the first was alone, stays listed but unhealthy.
        #expect(inventory.devices == [.init(id: "1209-0001-SN1", isHealthy: false), .init(id: "1209-0001-SN1-port-1-1", isHealthy: true),
                                      .init(id: "1209-0001-SN1-port-1-2", isHealthy: true)])
        #expect(DeviceInventory().advertises(Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: descriptor("K1", port: "1-3", address: 7, protocols: []))))
    }

    @Test("A disconnection of an older connection does not touch the device's newer one")
    func staleDisconnection() {
        var inventory = DeviceInventory()
        let old = Accessory(connectionID: ConnectionID(rawValue: 1), descriptor: descriptor("SN1", port: "1-1", address: 5))
        let new = Accessory(connectionID: ConnectionID(rawValue: 2), descriptor: descriptor("SN1", port: "1-1", address: 6))
        inventory.apply(.connected(old))
        inventory.apply(.connected(new))
        let changed = inventory.apply(.disconnected(old, .ghostEvicted(.absentFromSnapshot)))
        #expect(!changed)
        #expect(inventory.devices == [.init(id: "1209-0001-SN1", isHealthy: true)])
    }
}
