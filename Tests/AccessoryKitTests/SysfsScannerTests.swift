import AccessoryCore
import Foundation
import Testing
@testable import AccessoryKit

@Suite("Sysfs scanner over a fake tree")
struct SysfsScannerTests {
    @Test func stringsAreExact() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(
            port: "1-1", bus: 1, address: 5, vendor: 0x0fce, product: 0x0166, serial: "0123456789ABCDEF",
            manufacturer: "Sony\n\n", name: "Mini Pro \n")
        try sysfs.add(
            port: "1-2", bus: 1, address: 6, vendor: 0x1209, product: 0x0002, serial: nil,
            manufacturer: "", name: nil, raw: ["manufacturer": [0x41, 0xff, 0x42, 0x0a]])
        let devices = SysfsScanner(root: sysfs.root).scan().devices
        try #require(devices.count == 2)
        // No newline: nothing is cut. Two newlines: exactly one is cut. Spaces stay.
        #expect(devices[0].descriptor.serial == "0123456789ABCDEF")
        #expect(devices[0].descriptor.manufacturer == "Sony\n")
        #expect(devices[0].descriptor.name == "Mini Pro ")
        #expect(devices[0].descriptor.vendor == 0x0fce && devices[0].descriptor.product == 0x0166)
        // Invalid UTF-8 becomes U+FFFD; a missing attribute is nil.
        #expect(devices[1].descriptor.manufacturer == "A\u{FFFD}B")
        #expect(devices[1].descriptor.serial == nil && devices[1].descriptor.name == nil)
    }

    @Test func aScanThatCannotReadIsAFailureNotAnEmptyBus() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, serial: "SN1\n")
        #expect(SysfsScanner(root: sysfs.root).scan().failure == nil)
        // A device whose busnum cannot be read (here EISDIR; EMFILE or EACCES alike).
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-2", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-2/busnum", withIntermediateDirectories: true)
        let broken = SysfsScanner(root: sysfs.root).scan()
        #expect(broken.devices.isEmpty)
        #expect(broken.failure?.contains("1-2/busnum") == true && broken.failure?.contains("EISDIR") == true, "\(String(describing: broken.failure))")
        // A root that is not a directory: a failure too; a missing one is no USB at all.
        let file = sysfs.root + "/1-1/busnum"
        #expect(SysfsScanner(root: file).scan().failure?.contains("cannot list") == true)
        let missing = SysfsScanner(root: sysfs.root + "/absent").scan()
        #expect(missing.failure == nil && missing.note != nil)
        // A device directory that vanishes midway (no busnum any more) is only skipped.
        try FileManager.default.removeItem(atPath: sysfs.root + "/1-2")
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-3", withIntermediateDirectories: true)
        let partial = SysfsScanner(root: sysfs.root).scan()
        #expect(partial.failure == nil && partial.devices.count == 1)
    }

    @Test func hubsAreListedOnlyWhenAsked() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "usb1", bus: 1, address: 1, vendor: 0x1d6b, product: 0x0002, deviceClass: 9, interfaceString: "hub\n")
        try sysfs.add(port: "1-1", bus: 1, address: 2, vendor: 0x05e3, product: 0x0608, deviceClass: 9, interfaceString: nil)
        try sysfs.add(port: "1-1.4", bus: 1, address: 3, vendor: 0x1209, product: 0x0001)
        #expect(SysfsScanner(root: sysfs.root).scan().devices.map(\.descriptor.port) == ["1-1.4"])
        let all = SysfsScanner(root: sysfs.root, includeHubs: true).scan().devices
        try #require(all.map(\.descriptor.port) == ["usb1", "1-1", "1-1.4"])
        #expect(all[0].isHub && all[1].isHub && !all[2].isHub)
        // A root hub's interface directory is `1-0:1.0`.
        #expect(all[0].configuration?.interfaces.first?.name == "hub")
    }

    @Test func interfaceDirectoriesAndStrayEntriesAreSkipped() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001)
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-1:1.0", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: sysfs.root + "/1-9", withIntermediateDirectories: true)
        let devices = SysfsScanner(root: sysfs.root).scan().devices
        try #require(devices.map(\.descriptor.port) == ["1-1"])
        #expect(devices[0].descriptor.protocols == ["org.example.loopback"])
    }

    @Test func brokenDescriptorsStillListTheDevice() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add(port: "1-1", bus: 1, address: 5, vendor: 0x1209, product: 0x0001, raw: ["descriptors": [0, 1, 2]])
        let device = try #require(SysfsScanner(root: sysfs.root).scan().devices.first)
        #expect(device.configuration == nil && device.deviceDescriptor == nil)
        #expect(!device.descriptorIssues.isEmpty)
        #expect(device.descriptor.protocols == nil)
        #expect(device.descriptor.serial == "SN")
    }

    @Test func noUSBSubsystemIsANoteNotAnError() {
        let result = SysfsScanner(root: "/nonexistent/sys/bus/usb/devices").scan()
        #expect(result.devices.isEmpty)
        #expect(result.note?.contains("/nonexistent/sys/bus/usb/devices") == true)
    }
}
