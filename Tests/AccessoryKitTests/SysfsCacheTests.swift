import AccessoryCore
import Foundation
import Testing
@testable import AccessoryKit

/// The farm's sysfs reads: an unchanged device costs one `devnum` read, or one `stat`.
@Suite("Sysfs cache")
struct SysfsCacheTests {
    @Test("An unchanged device comes from the cache; a new device number, or a device without interfaces, is read again")
    func cache() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, manufacturer: "Before\n")
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "Before")
        #expect(cache.count == 1)

        // The same instance (same name, same device number): what was read still holds,
        // so a change to another file is not seen. This is how the test tells a cache hit.
        try Data("After\n".utf8).write(to: URL(fileURLWithPath: sysfs.root + "/1-1/manufacturer"))
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "Before")
        #expect(cache.scan().devices.first?.descriptor.manufacturer == "Before")

        // A re-enumeration: a new device number, read in full.
        try sysfs.remove(port: "1-1")
        try sysfs.add(port: "1-1", bus: 1, address: 6, vendor: 0x1209, product: 0x0001, manufacturer: "Again\n")
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "Again")
        #expect(cache.device(named: "1-1")?.descriptor.address == 6)

        // Gone: nothing, and forgotten by the next scan.
        try sysfs.remove(port: "1-1")
        #expect(cache.device(named: "1-1") == nil)
        #expect(cache.scan().devices.isEmpty)
        #expect(cache.count == 0)
    }

    @Test("Another instance on the same port under the same device number (addresses wrapped) is read anew, not given the last one's strings")
    func addressWrap() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "OLD\n", manufacturer: "Old maker\n")
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        #expect(cache.device(named: "1-1")?.descriptor.serial == "OLD")
        // The kernel removes the directory and, 127 arrivals later, makes a new one under the
        // same name with the same number. kernfs never reuses a node's inode number, so the
        // old directory is kept aside here while the new one is made, as kernfs would number
        // it. (The scan in between never ran: a storm, or a farm's slow period.)
        try FileManager.default.moveItem(atPath: sysfs.root + "/1-1", toPath: sysfs.root + "/gone-1-1")
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0002, serial: "NEW\n", manufacturer: "New maker\n")
        let again = try #require(cache.device(named: "1-1"))
        #expect(again.descriptor.serial == "NEW")
        #expect(again.descriptor.manufacturer == "New maker")
        #expect(again.descriptor.product == 0x0002)
        // And the new instance is remembered in its turn.
        try Data("Changed\n".utf8).write(to: URL(fileURLWithPath: sysfs.root + "/1-1/manufacturer"))
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "New maker")
    }

    @Test("An entry read over a second after its files were made is answered by a stat alone; another instance, or none, is still seen")
    func statAlone() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "OLD\n", manufacturer: "Before\n")
        // The files were made "ten seconds ago": the clock the cache compares change times with
        // is moved on, so the stamp alone names this instance.
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true), realTime: { SysfsCache.realTimeNow() + 10 })
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "Before")
        #expect(cache.statOnlyHits == 0)
        try Data("After\n".utf8).write(to: URL(fileURLWithPath: sysfs.root + "/1-1/manufacturer"))
        #expect(cache.device(named: "1-1")?.descriptor.manufacturer == "Before")
        #expect(cache.scan().devices.first?.descriptor.manufacturer == "Before")
        #expect(cache.statOnlyHits == 2)

        // Another instance under the same name and number (its files are other inodes, as
        // kernfs makes them): its stamp differs, so it is read in full.
        try FileManager.default.moveItem(atPath: sysfs.root + "/1-1", toPath: sysfs.root + "/gone-1-1")
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0002, serial: "NEW\n", manufacturer: "New maker\n")
        let again = try #require(cache.device(named: "1-1"))
        #expect(again.descriptor.serial == "NEW")
        #expect(again.descriptor.product == 0x0002)
        #expect(cache.statOnlyHits == 2)

        // Gone: the stat fails, and nothing is answered.
        try sysfs.remove(port: "1-1")
        #expect(cache.device(named: "1-1") == nil)
        #expect(cache.count == 0)
    }

    @Test("An entry whose files are younger than a second still has its device number read")
    func youngEntriesReadDevnum() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001)
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true), realTime: { 0 })
        #expect(cache.device(named: "1-1") != nil)
        #expect(cache.device(named: "1-1") != nil)
        #expect(cache.count == 1)
        #expect(cache.statOnlyHits == 0)
    }

    @Test("A device read before its configuration has interfaces is not remembered")
    func noInterfacesNoCache() throws {
        let sysfs = try FakeSysfs()
        // Only the device descriptor so far: no configuration, no interfaces.
        let full = FakeSysfs.loopbackDescriptors(vendor: 0x1209, product: 0x0002)
        try sysfs.add(port: "1-2", bus: 1, address: 7, vendor: 0x1209, product: 0x0002, raw: ["descriptors": Array(full.prefix(18))])
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        let first = try #require(cache.device(named: "1-2"))
        #expect(first.configuration?.interfaces.isEmpty ?? true)
        #expect(cache.count == 0)
        try Data(full).write(to: URL(fileURLWithPath: sysfs.root + "/1-2/descriptors"))
        #expect(cache.device(named: "1-2")?.configuration?.interfaces.count == 1)
        #expect(cache.count == 1)
    }

    @Test("A scan equals the scanner's own, device for device")
    func scanEqualsScanner() throws {
        let sysfs = try FakeSysfs()
        for i in 1...20 {
            try sysfs.add(port: "1-\(i)", bus: 1, address: 1 + i, vendor: 0x1209, product: UInt16(i), serial: "S\(i)\n")
        }
        let scanner = SysfsScanner(root: sysfs.root, includeHubs: true)
        let cache = SysfsCache(scanner)
        #expect(cache.scan() == scanner.scan())
        #expect(cache.scan() == scanner.scan(), "from the cache")
        #expect(cache.count == 20)
    }

    @Test("An arrival whose port another instance holds is judged from that instance's IDs, not its directory; the arrival's own instance is read whole")
    func arrivalOfAnotherInstance() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: "NEW\n", manufacturer: "New maker\n")
        let cache = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        // The notice names address 5; the port holds address 6 now (a storm's backlog).
        let other = try #require(cache.arrival(named: "1-1", address: 5, speed: nil))
        #expect(other.descriptor.bus == 1 && other.descriptor.address == 6)
        #expect(other.descriptor.vendor == 0x1209 && other.descriptor.product == 0x0002)
        #expect(other.descriptor.serial == nil && other.descriptor.manufacturer == nil && other.configuration == nil)
        #expect(cache.identityOnlyReads == 1)
        #expect(cache.count == 0, "a partial read is not remembered")
        // Its IDs come from the descriptors; without them, from idVendor and idProduct.
        try Data().write(to: URL(fileURLWithPath: sysfs.root + "/1-1/descriptors"))
        #expect(cache.arrival(named: "1-1", address: 5, speed: nil)?.descriptor.product == 0x0002)
        try Data(FakeSysfs.loopbackDescriptors(vendor: 0x1209, product: 0x0002)).write(to: URL(fileURLWithPath: sysfs.root + "/1-1/descriptors"))

        // The notice's own instance: the whole directory, as a look reads it.
        let same = try #require(cache.arrival(named: "1-1", address: 6, speed: nil))
        #expect(same == cache.scanner.device(named: "1-1"))
        #expect(same.descriptor.serial == "NEW" && same.configuration?.interfaces.count == 1)
        #expect(cache.identityOnlyReads == 2)
        #expect(cache.count == 1)
        // Gone: nothing.
        try sysfs.remove(port: "1-1")
        #expect(cache.arrival(named: "1-1", address: 5, speed: nil) == nil)
    }

    @Test("An arrival's speed comes from libusb's record when it has one, else from the speed file")
    func arrivalSpeedFromRecord() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, raw: ["speed": Array("12\n".utf8)])
        let known = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        #expect(known.arrival(named: "1-1", address: 5, speed: .high)?.speed == .high)
        let unknown = SysfsCache(SysfsScanner(root: sysfs.root, includeHubs: true))
        #expect(unknown.arrival(named: "1-1", address: 5, speed: nil)?.speed == .full)
    }

    @Test("A device whose directory is gone once its device number was read is nothing, not a device of unreadable files")
    func goneAfterDevnum() {
        let scanner = SysfsScanner(root: NSTemporaryDirectory() + "no-such-sysfs-\(UUID().uuidString)", includeHubs: true)
        guard case .success(let info) = scanner.read("1-1", devnum: 5) else {
            Issue.record("a gone directory is not a failure")
            return
        }
        #expect(info == nil)
    }

    @Test("The bus number comes from the kernel's directory name when the device number is known")
    func busFromName() {
        #expect(PortChain.bus(inName: "3-1.4") == 3)
        #expect(PortChain.bus(inName: "12-1") == 12)
        #expect(PortChain.bus(inName: "usb4") == 4)
        for name in ["usb", "usbx", "x-1", "-1", "1", "0-1", "usb0"] {
            #expect(PortChain.bus(inName: name) == nil, "\(name)")
        }
    }
}
