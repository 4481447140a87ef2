import AccessoryCapture
import AccessoryKit
import AccessoryTestSupport
import AccessoryTesting
import AccessoryTraces
import Foundation
import Testing

/// `accessoryctl open` against the simulator's loopback accessories. Nested in the live
/// suite, so it never runs alongside the other live commands.
extension LiveCLITests {
    @Suite("accessoryctl open", .simulatorLock)
    struct Open {
        static let loopback = ["--protocol", "org.example.loopback"]

        @Test("Piping 4 MiB through open gives the same bytes back (SHA-256), and exits 0 after the idle timeout")
        func pipesAFile() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let input = dir.appendingPathComponent("in.bin")
            let output = dir.appendingPathComponent("out.bin")
            var bytes = [UInt8](repeating: 0, count: 4 << 20)
            var state: UInt64 = 0x1234_5678
            for i in bytes.indices {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
            }
            try Data(bytes).write(to: input)
            let command = "'\(OpenCLI.accessoryctl)' open 1209:0001:SN1 --protocol org.example.loopback --idle-timeout 0.3 < '\(input.path)' > '\(output.path)'"
            let start = Date()
            let r = try CLI.run("/bin/sh", ["-c", command])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.isEmpty, "\(r.stderr)")
            #expect(Date().timeIntervalSince(start) >= 0.3, "it waits for the idle timeout")
            let sums = try CLI.run("/usr/bin/sha256sum", [input.path, output.path]).stdoutLines.map { $0.split(separator: " ")[0] }
            #expect(sums.count == 2 && sums[0] == sums[1], "\(sums)")
            #expect((try? Data(contentsOf: output).count) == 4 << 20)
        }

        @Test("open --progress ends with a line of bytes each way, seconds and MB/s, each to one decimal")
        func progress() throws {
            let command = "head -c 1048576 /dev/zero | '\(OpenCLI.accessoryctl)' open 1209:0001:SN1 --protocol org.example.loopback --idle-timeout 0.3 --progress > /dev/null"
            let r = try CLI.run("/bin/sh", ["-c", command])
            #expect(r.status == 0, "\(r.stderr)")
            let last = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
            #expect(last.contains(/sent 1\.0 MiB, received 1\.0 MiB, \d+\.\d s, \d+\.\d MB\/s$/), "\(r.stderr)")
        }

        @Test("open --capture: a 1 MiB echo is recorded as usbmon pcapng; tshark finds no malformed packet, bulk OUT carries the input byte for byte, and the capture replays with the same answers", .needsTshark)
        func capturesTheEcho() async throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let input = dir.appendingPathComponent("in.bin")
            let output = dir.appendingPathComponent("out.bin")
            let capture = dir.appendingPathComponent("echo.pcapng")
            var rng = SplitMix64(seed: 1 << 20)
            let bytes = rng.bytes(1 << 20)
            try Data(bytes).write(to: input)
            let command = "'\(OpenCLI.accessoryctl)' open 1209:0001:SN1 --protocol org.example.loopback --idle-timeout 0.3 --capture '\(capture.path)' < '\(input.path)' > '\(output.path)'"
            let r = try CLI.run("/bin/sh", ["-c", command])
            #expect(r.status == 0, "\(r.stderr)")
            #expect((try? Data(contentsOf: output)) == Data(bytes))
            let dissection = try Tshark.verbose(capture.path)
            #expect(!dissection.contains("Malformed"))
            #expect(!dissection.contains("Expert Info (Error"))
            // tshark's own view of the bulk OUT data: every S record's payload on endpoint 0x01.
            let fields = try Tshark.run([
                "-r", capture.path, "-Y", "usb.endpoint_address == 0x01 && usb.urb_type == 0x53", "-T", "fields", "-e", "usb.capdata",
            ])
            let digits = Array(fields.utf8).filter { $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "\n") }
            let value: (UInt8) -> UInt8 = { $0 <= UInt8(ascii: "9") ? $0 - UInt8(ascii: "0") : ($0 | 0x20) - UInt8(ascii: "a") + 10 }
            let sent = stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
            #expect(sent.count == bytes.count)
            #expect(sent == bytes, "bulk OUT in the capture equals the input")
            let summary = try CLI.run(OpenCLI.accessoryctl, ["capture", "summary", capture.path, "--json"])
            #expect(summary.status == 0)
            #expect(try Tshark.counts(fromSummaryJSON: summary.stdout) == Tshark.summary(of: capture.path).counts)
            try await Self.replayEcho(capture.path, expecting: bytes)
        }

        /// Replays an echo's capture: its bulk OUT transfers, sent again one by one, are
        /// answered on the IN stream with exactly the bytes the accessory echoed, and the
        /// replay finds nothing missing and nothing different.
        static func replayEcho(_ path: String, expecting bytes: [UInt8]) async throws {
            let capture = try USBCapture(path: path)
            let device = try #require(capture.devices.first { $0.vendor == 0x1209 })
            let recorded = capture.transfers(of: device)
            let outs = recorded.filter { $0.kind == .bulk && $0.endpoint == 0x01 && $0.status == 0 }
            let ins = recorded.filter { $0.kind == .bulk && $0.endpoint == 0x81 && $0.status == 0 }
            let usb = SimulatedUSB()
            // The descriptors (and the interface's name) come from the capture itself.
            let replayed = await usb.plug(try SimulatedAccessory(replaying: capture, device: device))
            let echoed = try await withAccessoryManager(usb: usb) { manager in
                let accessory = try #require(await manager.connectedAccessories.first)
                #expect(accessory.descriptor.serial == "SN1" && accessory.protocolStrings == ["org.example.loopback"])
                return try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                    try await withThrowingTaskGroup(of: [UInt8].self) { group in
                        group.addTask {
                            for t in outs { try await session.transferOut(0x01, t.data) }
                            return []
                        }
                        group.addTask { try await session.read(exactly: ins.reduce(0) { $0 + $1.data.count }) }
                        return try await group.reduce(into: []) { $0 += $1 }
                    }
                }
            }
            #expect(echoed == bytes, "the replayed accessory answers with the recorded echo")
            let report = await usb.replayReport(of: replayed)
            #expect(report.divergences.isEmpty && report.unconsumed == 0, "\(report)")
            #expect(report.matched == outs.count + ins.count, "\(report)")
        }

        @Test("An unknown target exits 1 and lists what is present")
        func unknownTarget() throws {
            let r = try OpenCLI.run("open", "1209:9999", "--protocol", "org.example.loopback")
            #expect(r.status == 1)
            #expect(r.stderr.contains("no accessory matches 1209:9999"), "\(r.stderr)")
            #expect(r.stderr.contains("1209:0001 SN1"), "\(r.stderr)")
            #expect(r.stdout.isEmpty)
        }

        @Test("BUS:ADDRESS, as list prints it, opens that accessory")
        func busAddressTarget() throws {
            let device = try SimulatorControl.device(serial: "SN2").id
            let r = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--protocol", "org.example.loopback", "--idle-timeout", "0.1"], stdin: Data("by address\n".utf8))
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == "by address\n")
        }

        @Test("An accessory whose protocol interface is number 5 opens and echoes on interface 5; one numbered 40 (beyond libusb's 32) fails clearly, without a crash")
        func interfaceNumbers() throws {
            let five = try SimulatorControl.plug("1209:00c9:IFACE5,interface=5").id
            defer { _ = try? SimulatorControl.ctl("unplug", five) }
            let list = try CLI.run(OpenCLI.accessoryctl, ["list", "--json"])
            #expect(list.stdout.contains("IFACE5"))
            let echoed = try CLI.run(OpenCLI.accessoryctl, ["open", five, "--idle-timeout", "0.2"] + Self.loopback, stdin: Data("five".utf8))
            #expect(echoed.status == 0 && echoed.stdout == "five", "\(echoed.stderr)")
            let forty = try SimulatorControl.plug("1209:00ca:IFACE40,interface=40").id
            defer { _ = try? SimulatorControl.ctl("unplug", forty) }
            let failed = try CLI.run(OpenCLI.accessoryctl, ["open", forty] + Self.loopback, stdin: Data("x".utf8))
            #expect(failed.status == 1, "\(failed.stderr)")
            #expect(failed.stderr.contains("error: ") && !failed.stderr.contains("Fatal error"), "\(failed.stderr)")
            #expect(throws: (any Error).self) { try SimulatorControl.ctl("plug", "1209:00cb:BAD,interface=256") }
            #expect(throws: (any Error).self) { try SimulatorControl.ctl("plug", "1209:00cb:BAD,sparkles") }
        }

        @Test("Cloned serials: open VID:PID:SERIAL exits 1 naming both ports; open PORT opens the one asked for")
        func clonedSerials() throws {
            let a = try SimulatorControl.plug("1209:00cc:TWIN").id
            let b = try SimulatorControl.plug("1209:00cc:TWIN").id
            defer { _ = try? SimulatorControl.ctl("unplug", a); _ = try? SimulatorControl.ctl("unplug", b) }
            let ports = try SimulatorControl.ctl(["list"]).joined(separator: " ")
            let ambiguous = try CLI.run(OpenCLI.accessoryctl, ["open", "1209:00cc:TWIN"] + Self.loopback, stdin: Data())
            #expect(ambiguous.status == 1)
            let list = try CLI.run(OpenCLI.accessoryctl, ["list", "--json"])
            let twinPorts = list.stdout.components(separatedBy: "{").filter { $0.contains("TWIN") }.compactMap { entry -> String? in
                guard let r = entry.range(of: "\"port\":\"") else { return nil }
                return String(entry[r.upperBound...].prefix { $0 != "\"" })
            }
            try #require(twinPorts.count == 2, "\(list.stdout) \(ports)")
            for port in twinPorts { #expect(ambiguous.stderr.contains(port), "\(ambiguous.stderr)") }
            let byPort = try CLI.run(OpenCLI.accessoryctl, ["open", twinPorts[0], "--idle-timeout", "0.2"] + Self.loopback, stdin: Data("one".utf8))
            #expect(byPort.status == 0 && byPort.stdout == "one", "\(byPort.stderr)")
        }

        @Test("An unknown protocol exits 1 naming what the accessory speaks")
        func unknownProtocol() throws {
            let r = try OpenCLI.run("open", "1209:0001:SN1", "--protocol", "org.example.nope")
            #expect(r.status == 1)
            #expect(r.stderr.contains("it speaks org.example.loopback"), "\(r.stderr)")
        }

        @Test("SIGTERM (and SIGINT) close the session cleanly: exit 0, interface released", arguments: [SIGTERM, SIGINT])
        func signalReleasesTheInterface(signal: Int32) throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try SimulatorControl.device(serial: "SN1").id
            let before = try SimulatorControl.ioctlLog(device)
            let open = try OpenProcess(["1209:0001:SN1"] + Self.loopback, in: dir)
            #expect(try SimulatorControl.waitForLog(device) { $0["claimed"] == "0" }, "the session claims interface 0")
            open.send(Data("ping".utf8))
            pollUntil { open.stdout.count >= 4 }
            #expect(open.stdout == Data("ping".utf8))
            kill(open.process.processIdentifier, signal)
            let (status, _) = open.waitForExit()
            #expect(status == 0, "\(open.stderr)")
            let after = try SimulatorControl.ioctlLog(device)
            #expect(after["claimed"] == "-")
            #expect(Int(after["released"] ?? "") == Int(before["released"] ?? "x").map { $0 + 1 }, "released explicitly: \(after)")
            #expect(after["dropped"] != nil && after["dropped"] == before["dropped"], "not merely dropped when the process died: \(after)")
            #expect(after["open"] != nil && after["open"] == before["open"], "the device node is closed: \(after)")
        }

        @Test("SIGTERM mid-stream, with a kernel driver detached: exit 0, interface released, driver attached again")
        func sigtermDuringABusySessionReattachesTheDriver() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try SimulatorControl.plug("1209:00c3:BUSYTERM").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            try SimulatorControl.ctl("kernel-driver", device, "0", "usbtest")
            let before = try SimulatorControl.ioctlLog(device)
            #expect(before["driver"] == "usbtest")
            let open = try OpenProcess(["1209:00c3:BUSYTERM", "--detach-kernel-driver"] + Self.loopback, in: dir)
            defer { if open.process.isRunning { kill(open.process.processIdentifier, SIGKILL) } }

            // Keep data flowing: a writer thread feeds stdin until the pipe breaks.
            signal(SIGPIPE, SIG_IGN)  // a write after the exit fails with EPIPE instead
            let fd = open.input.fileHandleForWriting.fileDescriptor
            let writer = Thread {
                let chunk = [UInt8](repeating: 0x5a, count: 64 << 10)
                while chunk.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) > 0 {}
            }
            writer.start()
            let busy = try SimulatorControl.waitForLog(device) { log in
                log["claimed"] == "0" && (UInt64(log["bytes-out"] ?? "") ?? 0) >= (UInt64(before["bytes-out"] ?? "") ?? 0) + (4 << 20)
            }
            #expect(busy, "4 MiB went through the session before the signal")
            let during = try SimulatorControl.ioctlLog(device)
            #expect(during["driver"] == "-", "the driver is detached while the session is open: \(during)")
            kill(open.process.processIdentifier, SIGTERM)
            let (status, _) = open.waitForExit()
            #expect(status == 0, "\(open.stderr)")
            let after = try SimulatorControl.ioctlLog(device)
            #expect(after["claimed"] == "-", "\(after)")
            #expect(Int(after["released"] ?? "") == Int(before["released"] ?? "x").map { $0 + 1 }, "released explicitly: \(after)")
            #expect(after["dropped"] != nil && after["dropped"] == before["dropped"], "not merely dropped when the process died: \(after)")
            #expect(after["driver"] == "usbtest", "the kernel driver is attached again: \(after)")
            #expect(after["open"] != nil && after["open"] == before["open"], "the device node is closed: \(after)")
            #expect(after["pending-in"] == "0" && after["pending-out"] == "0", "no URB left behind: \(after)")
        }

        @Test("After SIGKILL, the claim dies with the process and a new process opens the same accessory")
        func sigkillThenReopen() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try SimulatorControl.device(serial: "SN1").id
            let before = try SimulatorControl.ioctlLog(device)
            let open = try OpenProcess(["1209:0001:SN1"] + Self.loopback, in: dir)
            #expect(try SimulatorControl.waitForLog(device) { $0["claimed"] == "0" }, "the session claims interface 0")
            kill(open.process.processIdentifier, SIGKILL)
            _ = open.waitForExit()
            #expect(try SimulatorControl.waitForLog(device) { $0["claimed"] == "-" }, "the kernel (here: the simulator) drops the dead client's claim")
            #expect(Int(try SimulatorControl.ioctlLog(device)["dropped"] ?? "") == Int(before["dropped"] ?? "x").map { $0 + 1 })
            let again = try CLI.run(CLI.accessoryctl, ["open", "1209:0001:SN1"] + Self.loopback + ["--idle-timeout", "0.3"], stdin: Data("again".utf8))
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout == "again")
        }

        @Test(
            "Without permission on the device node, open names the udev rule that fixes it; with the rule's access, the same user opens it",
            .needsSetpriv)
        func permissionDeniedNamesTheUdevRule() throws {
            let device = try SimulatorControl.plug("1209:00c4:NOPERM").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            // Another user reaches the testbed as it would reach /sys and /dev; the device
            // node itself stays root's, 0600, as on a machine without the rule.
            let nobody = try UnprivilegedUser(tool: OpenCLI.accessoryctl)
            try nobody.setMode(0o600, of: device)
            let asNobody = nobody.command(["open", "1209:00c4:NOPERM"] + Self.loopback + ["--idle-timeout", "0.2"])

            let denied = try CLI.run("/usr/bin/setpriv", asNobody, stdin: Data("hi".utf8))
            #expect(denied.status == 1)
            let error = denied.stderr.split(separator: "\n").last.map(String.init) ?? ""
            #expect(error.hasPrefix("error: no permission to open /dev/bus/usb/"), "\(denied.stderr)")
            #expect(error.contains("accessoryctl udev-rule --vendor 1209 --product 00c4"), "\(denied.stderr)")
            // `doctor`, run by that user, says the same.
            let doctor = try CLI.run("/usr/bin/setpriv", nobody.command(["doctor"]))
            #expect(doctor.status == 1)
            #expect(doctor.stdout.contains("1209:00c4 Loopback Accessory on") && doctor.stdout.contains("no permission to open /dev/bus/usb/"), "\(doctor.stdout)")

            // What the rule's uaccess ACL grants the seat's user, here as a mode.
            try nobody.setMode(0o666, of: device)
            let allowed = try CLI.run("/usr/bin/setpriv", asNobody, stdin: Data("hi".utf8))
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(allowed.stdout == "hi")
        }

        @Test("When the accessory goes away, open exits 1 at once, saying why")
        func accessoryGoesAway() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try SimulatorControl.plug("1209:00c1:CLIGONE").id
            let open = try OpenProcess(["1209:00c1:CLIGONE"] + Self.loopback, in: dir)
            defer { if open.process.isRunning { kill(open.process.processIdentifier, SIGKILL) } }
            #expect(try SimulatorControl.waitForLog(device) { $0["claimed"] == "0" })
            try SimulatorControl.ctl("unplug", device)
            let (status, seconds) = open.waitForExit(timeout: 5)
            #expect(status == 1)
            #expect(seconds < 1, "exited \(seconds) s after the unplug")
            // The last line; the manager may log the disconnect before it.
            let error = open.stderr.split(separator: "\n").last.map(String.init) ?? ""
            #expect(error == "error: accessory 1209:00c1 CLIGONE disconnected: unplugged", "\(open.stderr)")
        }

        @Test("In the kernel's order (transfers fail first, sysfs next, the remove event up to 240 ms later), open says unplugged, every time")
        func kernelOrderUnplugIsUnplugged() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            for (run, delay) in [0, 240, 30, 120, 0, 200, 60, 10, 180, 90].enumerated() {
                let serial = "KORDER\(run)"
                let device = try SimulatorControl.plug("1209:00c6:\(serial)").id
                let open = try OpenProcess(["1209:00c6:\(serial)"] + Self.loopback, in: dir)
                defer { if open.process.isRunning { kill(open.process.processIdentifier, SIGKILL) } }
                #expect(try SimulatorControl.waitForLog(device) { $0["claimed"] == "0" })
                // Bytes in flight both ways when the device goes.
                open.send(Data(repeating: 0x5a, count: 256 * 1024))
                try SimulatorControl.ctl("unplug", device, "--urbs-first", "--uevent-delay", String(delay))
                let (status, _) = open.waitForExit(timeout: 5)
                #expect(status == 1)
                let error = open.stderr.split(separator: "\n").last.map(String.init) ?? ""
                #expect(error == "error: accessory 1209:00c6 \(serial) disconnected: unplugged", "remove event \(delay) ms late: \(open.stderr)")
            }
        }

        @Test("A device whose node is missing while sysfs lists it stays listed: open fails, and a watcher sees no disconnect")
        func missingNodeIsNotADisconnect() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let device = try SimulatorControl.plug("1209:00c7:NONODE").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let watch = try Background(CLI.accessoryctl, ["watch", "--json"], in: dir)
            #expect(watch.waitForOutput { $0.contains("\"serial\":\"NONODE\"") })
            try SimulatorControl.ctl("fault", device, "no-node")
            let open = try OpenProcess(["1209:00c7:NONODE"] + Self.loopback, in: dir)
            let (status, _) = open.waitForExit(timeout: 10)
            #expect(status == 1, "\(open.stderr)")
            // A barrier on watch's output: a sentinel's plug and unplug. Its hotplug events
            // start reconciles that read sysfs, NONODE included, and watch prints in order:
            // once the sentinel's disconnect is out, so is any eviction of NONODE.
            let sentinel = try SimulatorControl.plug("1209:00c8:SENTINEL").id
            #expect(watch.waitForOutput { $0.contains("\"serial\":\"SENTINEL\"") })
            try SimulatorControl.unplug(sentinel)
            #expect(watch.waitForOutput { $0.contains("\"serial\":\"SENTINEL\",\"reason\"") })
            #expect(watch.stop(with: SIGTERM) == 0)
            let lines = watch.stdout.split(separator: "\n").filter { $0.contains("NONODE") }
            #expect(lines.count == 2, "\(lines)")
            #expect(lines.last?.contains("\"reason\":\"shutdown\"") == true, "sysfs lists it: no eviction before shutdown: \(lines)")
            let list = try CLI.run(OpenCLI.accessoryctl, ["list", "--json"])
            #expect(list.stdout.contains("NONODE"))
        }
    }
}
