import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

/// Runs against a recorded device, when the tests run under `umockdev-run -d DUMP`. With
/// `ACCESSORYKIT_DUMP=DUMP` set too, the strings are checked against the dump itself:
///
///     ACCESSORYKIT_DUMP=$f umockdev-run -d $f -- .build/debug/AccessoryKitPackageTests.xctest \
///         --testing-library swift-testing --filter UmockdevDumpTests
@Suite(
    "Recorded devices under umockdev-run", .serialized,
    .enabled(if: SimulatorControl.isUmockdevOnly, "needs umockdev-run -d DUMP (no accessory-sim)"))
struct UmockdevDumpTests {
    @Test func libusbAndSysfsAgree() throws {
        let sysfs = SysfsScanner(includeHubs: true).scan().devices
        let libusb = try LibUSBContext().devices()
        #expect(!libusb.isEmpty)
        for record in libusb {
            let match = sysfs.first { $0.descriptor.bus == record.bus && $0.descriptor.address == record.address }
            let info = try #require(match, "libusb lists \(record.node) but sysfs does not")
            #expect(info.descriptor.vendor == record.device.vendor && info.descriptor.product == record.device.product)
            #expect(info.descriptor.port == record.port, "libusb's port chain \(record.port) vs sysfs \(info.descriptor.port)")
            #expect(info.deviceDescriptor == record.device)
            #expect(info.configuration?.interfaces.count == record.configuration?.interfaces.count)
        }
    }

    @Test func managerListsEveryDeviceButHubs() async throws {
        let expected = SysfsScanner().scan().devices.map(\.descriptor)
        let manager = try await AccessoryManager(configuration: .init(logger: testLogger))
        #expect(manager.isHotplugAvailable)
        let log = await EventLog.recording(manager)
        #expect(await manager.connectedAccessories.map(\.descriptor) == expected)
        await manager.shutdown()
        await log.finished()
        #expect(await log.connected.count == expected.count)
        #expect(await log.disconnected.allSatisfy { $0.1 == .shutdown })
        checkInvariants(await log.events)
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["ACCESSORYKIT_DUMP"] != nil, "set ACCESSORYKIT_DUMP to the dump's path"))
    func stringsMatchTheDumpExactly() throws {
        let path = ProcessInfo.processInfo.environment["ACCESSORYKIT_DUMP"]!
        let wanted = try Self.devices(inDump: path).filter { $0["bDeviceClass"] != "09" && $0["busnum"] != nil }
        let scanned = SysfsScanner().scan().devices
        #expect(scanned.count == wanted.count)
        for attributes in wanted {
            let (busText, addressText) = (try #require(attributes["busnum"]), try #require(attributes["devnum"]))
            let bus = try #require(Int(busText.trimmingCharacters(in: .whitespacesAndNewlines)))
            let address = try #require(Int(addressText.trimmingCharacters(in: .whitespacesAndNewlines)))
            let d = try #require(scanned.first { $0.descriptor.bus == bus && $0.descriptor.address == address }?.descriptor)
            #expect(d.manufacturer == attributes["manufacturer"])
            #expect(d.name == attributes["product"])
            #expect(d.serial == attributes["serial"])
            #expect(d.vendor.map(Hex.four) == attributes["idVendor"].map { $0.lowercased() })
        }
    }

    /// The `A:` attributes of each `P:` device in a umockdev dump, unescaped.
    static func devices(inDump path: String) throws -> [[String: String]] {
        var devices: [[String: String]] = []
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("P: ") {
                devices.append([:])
            } else if line.hasPrefix("A: "), !devices.isEmpty, let eq = line.firstIndex(of: "=") {
                let key = String(line[line.index(line.startIndex, offsetBy: 3)..<eq])
                // As the kernel's files read, minus the one trailing newline the scanner strips.
                var value = unescape(line[line.index(after: eq)...])
                if value.hasSuffix("\n") { value.removeLast() }
                devices[devices.count - 1][key] = value
            }
        }
        return devices
    }

    /// Undoes C escapes: `\n`, `\t`, `\\`, `\xHH` and octal `\NNN`.
    static func unescape(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let c = utf8[i]
            i = utf8.index(after: i)
            guard c == UInt8(ascii: "\\"), i < utf8.endIndex else { bytes.append(c); continue }
            let e = utf8[i]
            i = utf8.index(after: i)
            switch e {
            case UInt8(ascii: "n"): bytes.append(0x0a)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "r"): bytes.append(0x0d)
            case UInt8(ascii: "x"):
                var value: UInt8 = 0
                for _ in 0..<2 where i < utf8.endIndex {
                    guard let digit = hexDigit(utf8[i]) else { break }
                    value = value << 4 | digit
                    i = utf8.index(after: i)
                }
                bytes.append(value)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var value = Int(e - UInt8(ascii: "0"))
                for _ in 0..<2 where i < utf8.endIndex && (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(utf8[i]) {
                    value = value * 8 + Int(utf8[i] - UInt8(ascii: "0"))
                    i = utf8.index(after: i)
                }
                bytes.append(UInt8(truncatingIfNeeded: value))
            default: bytes.append(e)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
