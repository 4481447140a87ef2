import Foundation
import Testing
@testable import AccessoryKit

/// The pure parts of port power: reading `wHubCharacteristics`, and sysfs's port names.
@Suite("Port power logic")
struct PortPowerLogicTests {
    @Test func switchingComesFromBitsOneAndZeroOnly() {
        for high in stride(from: 0, through: 0xfffc, by: 4) {
            let c = UInt16(high)
            #expect(PortPowerSwitching(hubCharacteristics: c) == .ganged)
            #expect(PortPowerSwitching(hubCharacteristics: c | 1) == .perPort)
            #expect(PortPowerSwitching(hubCharacteristics: c | 2) == PortPowerSwitching.none)
            #expect(PortPowerSwitching(hubCharacteristics: c | 3) == PortPowerSwitching.none)
        }
        #expect(PortPowerSwitching.perPort.refusal(hub: "1-1") == nil)
        #expect(PortPowerSwitching.ganged.refusal(hub: "1-1") == "hub 1-1 switches its ports together (ganged)")
        #expect(PortPowerSwitching.none.refusal(hub: "2-3.1")?.hasPrefix("hub 2-3.1 ") == true)
    }

    @Test func portsNameTheirHubAndBack() {
        #expect(SysfsPortFiles.upstream(of: "1-1.4")! == ("1-1", 4))
        #expect(SysfsPortFiles.upstream(of: "1-4")! == ("usb1", 4))
        #expect(SysfsPortFiles.upstream(of: "3-1.2.7")! == ("3-1.2", 7))
        #expect(SysfsPortFiles.upstream(of: "usb1") == nil)
        #expect(SysfsPortFiles.upstream(of: "1-0") == nil)
        #expect(SysfsPortFiles.upstream(of: "x-1") == nil)
        for port in ["1-1.4", "1-4", "3-1.2.7", "12-200"] {
            let up = SysfsPortFiles.upstream(of: port)!
            #expect(SysfsPortFiles.child(of: up.hub, port: up.number) == port)
        }
        #expect(SysfsPortFiles.interface(of: "usb2") == "2-0:1.0")
        #expect(SysfsPortFiles.interface(of: "2-1.3") == "2-1.3:1.0")
        let files = SysfsPortFiles(root: "/sys/bus/usb/devices")
        #expect(files.portDirectory(hub: "1-1", port: 4) == "/sys/bus/usb/devices/1-1/1-1:1.0/1-1-port4")
        #expect(files.portDirectory(hub: "usb1", port: 3) == "/sys/bus/usb/devices/usb1/1-0:1.0/usb1-port3")
        #expect(files.deviceDirectory("1-1.4") == "/sys/bus/usb/devices/1-1/1-1.4")
        #expect(files.deviceDirectory("1-4") == "/sys/bus/usb/devices/usb1/1-4")
    }

    @Test func hubsSortByBusThenPortNumbers() {
        let names = ["1-10", "usb2", "1-2", "2-1", "usb1", "1-2.10", "1-2.3"]
        #expect(names.sorted(by: HubPorts.portOrder) == ["usb1", "1-2", "1-2.3", "1-2.10", "1-10", "usb2", "2-1"])
    }

    @Test func aRefusedWriteNamesTheUdevRule() {
        #expect(SysfsPortFiles.disableRule.contains(#"DRIVER=="hub""#))
        #expect(SysfsPortFiles.authorizedRule(vendor: 0x1209).contains(#"ATTR{idVendor}=="1209""#))
        #expect(SysfsPortFiles.authorizedRule(vendor: 0x0a).contains(#"ATTR{idVendor}=="000a""#))
    }

    @Test("The rules a refused write names are the ones udev/70-accessorykit.rules ships, and they parse")
    func shippedPowerRules() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../udev/70-accessorykit.rules")
        let text = try String(contentsOf: url, encoding: .utf8)
        let shipped = text.split(separator: "\n").filter { $0.hasPrefix("# ") }.map { String($0.dropFirst(2)) }
        for rule in [SysfsPortFiles.disableRule, SysfsPortFiles.authorizedRule(vendor: nil)] {
            #expect(shipped.contains(rule), "\(rule)")
            let parsed = try #require(try UdevRulesParser().parse(rule).first)
            #expect(parsed.pairs.contains { $0.key == "SUBSYSTEM" && $0.value == "usb" })
            #expect(parsed.pairs.contains { $0.key == "RUN" && $0.value.contains("plugdev") })
        }
    }
}
