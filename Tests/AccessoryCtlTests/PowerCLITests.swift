import AccessoryTestSupport
import Foundation
import Testing

extension LiveCLITests {
    @Test("hubs tells per-port from ganged and none, with the USB 3 peer and what is on each port; --json says the same")
    func hubsListing() throws {
        var plugged: [String] = []
        defer { for id in plugged.reversed() { _ = try? SimulatorControl.ctl("unplug", id) } }
        for (port, options) in [("1-41", [String]()), ("1-42", ["--power", "ganged"]), ("1-43", ["--power", "none"]), ("1-44", ["--usb3"])] {
            let w = try SimulatorControl.ctl(["plug-hub", port, "3"] + options)
            plugged.append("\(w[1]):\(w[2])")
            if w.count >= 7 { plugged.append("\(w[4]):\(w[5])") }
        }
        plugged.append(try SimulatorControl.plug("1209:00f2:ONHUB", port: "1-41.2").id)
        let text = try CLI.ctl("hubs")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("hub 1-41 (bus 1 address"), "\(text.stdout)")
        #expect(text.stdout.contains("USB 2.00, 3 ports, per-port power switching\n"), "\(text.stdout)")
        #expect(text.stdout.contains("  port 2 (1-41.2): power on, 1209:00f2 ONHUB Loopback Accessory"))
        #expect(text.stdout.contains("3 ports, ganged power switching"))
        #expect(text.stdout.contains("3 ports, none power switching"))
        #expect(text.stdout.contains("per-port power switching, USB 3 peer 2-44"))
        #expect(text.stdout.contains("hub 2-44 (bus 2 address") && text.stdout.contains("USB 3.00, 3 ports, per-port power switching, USB 3 peer 1-44"))

        let json = try CLI.ctl("hubs", "--json")
        #expect(json.status == 0)
        let hubs = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let byName = Dictionary(hubs.compactMap { h in (h["hub"] as? String).map { ($0, h) } }, uniquingKeysWith: { a, _ in a })
        #expect(byName["1-41"]?["switching"] as? String == "per-port")
        #expect(byName["1-42"]?["switching"] as? String == "ganged")
        #expect(byName["1-43"]?["switching"] as? String == "none")
        #expect(byName["1-44"]?["peer"] as? String == "2-44")
        #expect(byName["2-44"]?["usbVersion"] as? String == "3.00")
        let ports = try #require(byName["1-41"]?["portStatus"] as? [[String: Any]])
        #expect(ports.count == 3)
        #expect((ports[1]["device"] as? [String: Any])?["serial"] as? String == "ONHUB")
        #expect(ports[1]["powered"] as? Bool == true)
    }

    @Test("power switches a per-port hub's port off and on (exit 0), refuses a ganged hub by name (exit 1), and bad usage exits 64")
    func powerCommand() throws {
        let w = try SimulatorControl.ctl("plug-hub", "1-45", "2")
        let g = try SimulatorControl.ctl("plug-hub", "1-46", "2", "--power", "ganged")
        defer {
            _ = try? SimulatorControl.ctl("unplug", "\(w[1]):\(w[2])")
            _ = try? SimulatorControl.ctl("unplug", "\(g[1]):\(g[2])")
        }
        let device = try SimulatorControl.plug("1209:00f3:SWITCHED", port: "1-45.1")
        let before = try SimulatorControl.output(["power-log"]).split(separator: "\n").count

        let off = try CLI.ctl("power", "1-45.1", "off")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(off.stdout == "port 1-45.1 (hub 1-45) off via disable\n")
        #expect(try pollUntil { try !SimulatorControl.list().contains { $0.serial == "SWITCHED" } })
        let on = try CLI.ctl("power", "1-45.1", "on")
        #expect(on.status == 0, "\(on.stderr)")
        #expect(try pollUntil { try SimulatorControl.list().contains { $0.serial == "SWITCHED" } })
        #expect(try SimulatorControl.device(serial: "SWITCHED").address != device.address)
        let cycle = try CLI.ctl("power", "1-45.1", "cycle", "--pause", "0.1")
        #expect(cycle.status == 0 && cycle.stdoutLines.count == 2, "\(cycle.stdout) \(cycle.stderr)")
        let log = try SimulatorControl.output(["power-log"]).split(separator: "\n").dropFirst(before).map(String.init)
        #expect(log == ["1-45.1 off", "1-45.1 on", "1-45.1 off", "1-45.1 on"])

        _ = try SimulatorControl.plug("1209:00f3:GANGED", port: "1-46.1")
        let ganged = try CLI.ctl("power", "1-46.1", "off")
        #expect(ganged.status == 1)
        #expect(ganged.stderr.contains("hub 1-46 switches its ports together (ganged)"), "\(ganged.stderr)")
        #expect(try SimulatorControl.list().contains { $0.serial == "GANGED" })

        #expect(try CLI.ctl("power", "1-45.1", "sideways").status == 64)
        #expect(try CLI.ctl("power", "not-a-port", "off").status == 64)
        #expect(try CLI.ctl("power", "1-45.9", "off").status == 1)
        _ = try? SimulatorControl.ctl("unplug", try SimulatorControl.device(serial: "SWITCHED").id)
    }
}
