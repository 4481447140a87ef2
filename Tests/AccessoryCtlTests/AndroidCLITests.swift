import Foundation
import AccessoryTestSupport
import Testing

/// `accessoryctl control` and `aoa`, and sessions over interrupt endpoints, against the
/// simulator's `,android` and `,interrupt` accessories through real libusb. Nested in the
/// live suite, so they never run alongside the other live commands.
extension LiveCLITests {
    @Suite("accessoryctl control and aoa", .simulatorLock)
    struct Android {
        static let strings = [
            "--manufacturer", "Example", "--model", "Loopback", "--description", "An example loopback",
            "--version", "1.0", "--uri", "https://example.org/loopback", "--serial", "0001",
        ]

        /// The JSON objects of `watch --json` output.
        static func lines(_ text: String) -> [[String: Any]] {
            text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        @Test("control: GET_PROTOCOL to the phone prints 02 00; to a loopback it stalls and exits 1; an interface request claims")
        func control() throws {
            let phone = try SimulatorControl.plug("18d1:4ee7:CTLPHONE:,android").id
            defer { _ = try? SimulatorControl.ctl("unplug", phone) }
            let got = try OpenCLI.run("control", phone, "--in", "--length", "2", "--type", "vendor", "--recipient", "device", "--request", "51")
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.stdout == "02 00\n")
            let refused = try OpenCLI.run("control", "1209:0001:SN1", "--in", "--length", "2", "--type", "vendor", "--request", "51")
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("refused vendor request 51") && refused.stderr.contains("STALL"), "\(refused.stderr)")
            let status = try OpenCLI.run(
                "control", "1209:0001:SN1", "--in", "--length", "2", "--type", "standard", "--recipient", "interface", "--request", "0")
            #expect(status.status == 0 && status.stdout == "00 00\n", "\(status.stderr)")
            let sn1 = try SimulatorControl.device(serial: "SN1").id
            #expect(try SimulatorControl.ioctlLog(sn1)["claimed"].map { $0 == "-" || $0.isEmpty } ?? true, "the claim is released afterwards")
            let usage = try OpenCLI.run("control", phone, "--in", "--type", "vendor", "--request", "51")
            #expect(usage.status == 64, "--in needs --length: \(usage.stderr)")
        }

        @Test("aoa switches the phone: watch shows it unplugged, then 18d1:2d01 on its port at a new address naming it as previous; aoa-strings has the six strings; open echoes")
        func switchesThePhone() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let phone = try SimulatorControl.plug("18d1:4ee7:PHONE1:,android").id
            var current = phone
            defer { _ = try? SimulatorControl.ctl("unplug", current) }
            let watch = try Background(CLI.accessoryctl, ["watch", "--json"] + LiveCLITests.interval, in: dir)
            defer { _ = watch.stop(with: SIGTERM) }
            #expect(watch.waitForOutput { $0.contains("PHONE1") })
            let phoneLine = try #require(Self.lines(watch.stdout).first { $0["serial"] as? String == "PHONE1" })
            let phoneID = try #require(phoneLine["connectionID"] as? Int)
            let phonePort = try #require(phoneLine["port"] as? String)
            let phoneAddress = try #require(phoneLine["address"] as? Int)

            let r = try CLI.run(OpenCLI.accessoryctl, ["aoa", phone] + Self.strings)
            #expect(r.status == 0, "\(r.stderr)")
            // `aoa` numbers connections in its own process: its ID for the phone equals watch's only
            // while no other suite on this simulator plugs anything in between (the kernel-order
            // run shares one simulator between suites), so the ID is checked in watch's events.
            #expect(r.stdout.contains("18d1:2d01 PHONE1 on \(phonePort)"), "\(r.stdout)")
            let ids = r.stdout.split(whereSeparator: { !$0.isNumber && $0 != "#" }).filter { $0.hasPrefix("#") }.compactMap { Int($0.dropFirst()) }
            #expect(r.stdout.contains(" continues #") && ids.count == 2 && ids[0] > ids[1], "the new connection, then the phone's: \(r.stdout)")

            #expect(watch.waitForOutput { $0.contains("\"product\":\"2d01\"") })
            let events = Self.lines(watch.stdout).filter { ($0["serial"] as? String) == "PHONE1" }
            #expect(events.count == 3, "\(watch.stdout)")
            guard events.count == 3 else { return }
            #expect(events[1]["notification"] as? String == "disconnected" && events[1]["connectionID"] as? Int == phoneID)
            #expect(events[1]["reason"] as? String == "unplugged")
            let fresh = events[2]
            #expect(fresh["notification"] as? String == "connected" && fresh["product"] as? String == "2d01")
            #expect(fresh["port"] as? String == phonePort)
            #expect((fresh["address"] as? Int).map { $0 != phoneAddress } == true)
            #expect(fresh["previous"] as? Int == phoneID)

            current = try SimulatorControl.device(serial: "PHONE1").id
            #expect(current != phone)
            let strings = try CLI.run(SimulatorControl.binary, ["ctl", "aoa-strings", current])
            #expect(strings.status == 0)
            #expect(strings.stdout == "0 Example\n1 Loopback\n2 An example loopback\n3 1.0\n4 https://example.org/loopback\n5 0001\n", "\(strings.stdout)")

            let echoed = try CLI.run(
                OpenCLI.accessoryctl, ["open", "18d1:2d01", "--protocol", "android.accessory", "--idle-timeout", "0.2"], stdin: Data("hello phone".utf8))
            #expect(echoed.status == 0, "\(echoed.stderr)")
            #expect(echoed.stdout == "hello phone")
        }

        @Test("aoa on a device that is not a phone exits 1: not an Android Open Accessory device")
        func notAPhone() throws {
            let r = try CLI.run(OpenCLI.accessoryctl, ["aoa", "1209:0002:SN2"] + Self.strings)
            #expect(r.status == 1)
            #expect(r.stderr.contains("is not an Android Open Accessory device"), "\(r.stderr)")
            #expect(try SimulatorControl.device(serial: "SN2").id.isEmpty == false, "it is still there")
        }

        @Test("A session over the ,interrupt accessory echoes, through interrupt transfers")
        func interruptEcho() throws {
            let device = try SimulatorControl.plug("1209:00d1:INTR1,interrupt").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let payload = String(repeating: "interrupt ", count: 50)
            let r = try CLI.run(
                OpenCLI.accessoryctl, ["open", device, "--protocol", "org.example.loopback", "--idle-timeout", "0.2"], stdin: Data(payload.utf8))
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == payload)
            let log = try SimulatorControl.ioctlLog(device)
            #expect((log["interrupt_urbs"].flatMap(Int.init) ?? 0) > 0, "\(log)")
            #expect(log["bulk_urbs"] == "0", "\(log)")
        }

        @Test(
            "aoa without permission on the phone's node names both udev rules",
            .needsSetpriv)
        func accessDenied() throws {
            let phone = try SimulatorControl.plug("18d1:4ee7:LOCKED:,android").id
            defer { _ = try? SimulatorControl.ctl("unplug", phone) }
            let nobody = try UnprivilegedUser(tool: OpenCLI.accessoryctl)
            try nobody.setMode(0o600, of: phone)
            let r = try CLI.run("/usr/bin/setpriv", nobody.command(["aoa", "18d1:4ee7:LOCKED"] + Self.strings))
            #expect(r.status == 1)
            #expect(r.stderr.contains("no permission to open /dev/bus/usb/"), "\(r.stderr)")
            #expect(r.stderr.contains("accessoryctl udev-rule --vendor 18d1 --product 4ee7"), "\(r.stderr)")
            #expect(r.stderr.contains("accessoryctl udev-rule --android-accessory"), "\(r.stderr)")
        }
    }
}
