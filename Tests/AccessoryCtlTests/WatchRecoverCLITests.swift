import AccessoryTestSupport
import Foundation
import Testing

/// `watch --recover` under accessory-sim: a vanished accessory's port power-cycled by the
/// watching manager, the report as a JSON line, and the recovery metrics moving.
@Suite("accessoryctl watch --recover (accessory-sim)", .serialized,
       .enabled(if: SimulatorControl.isActive, "needs accessory-sim: run scripts/test"))
struct WatchRecoverCLITests {
    @Test("watch --recover --recover-vanished brings a vanished accessory back with a power cycle, prints the report, and counts it in the metrics")
    func vanishedAccessoryComesBack() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hub = try SimulatorControl.device(fromReply: SimulatorControl.ctl("plug-hub", "1-42", "2"))
        defer { try? SimulatorControl.unplug(hub) }
        let device = try SimulatorControl.plug("1209:00f8:WATCHREC", port: "1-42.1")
        defer { if let now = try? SimulatorControl.device(serial: "WATCHREC") { try? SimulatorControl.unplug(now) } else { try? SimulatorControl.unplug(device) } }
        let watch = try Background(
            CLI.accessoryctl,
            ["watch", "--json", "--recover", "--recover-vanished", "0.5", "--metrics", "127.0.0.1:0"] + LiveCLITests.interval, in: dir)
        defer { _ = watch.stop(with: SIGTERM) }
        var port: UInt16?
        _ = pollUntil {
            guard let range = watch.stderr.range(of: "serving metrics at http://127.0.0.1:") else { return false }
            port = UInt16(watch.stderr[range.upperBound...].prefix { $0.isNumber })
            return port != nil
        }
        let metricsPort = try #require(port, "\(watch.stderr)")
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"WATCHREC\"") })
        let before = HTTPFetch.get(port: metricsPort, "/metrics")?.body ?? ""
        #expect(HTTPFetch.sample(#"accessory_recoveries_total{step="power-cycle",outcome="recovered"}"#, in: before) == 0)
        #expect(try SimulatorControl.ctl("vanish", device.id, "--back-on", "power-cycle") == ["ok"])
        #expect(watch.waitForOutput(timeout: 15) { $0.contains("\"notification\":\"recovery\"") }, "\(watch.stdout)\n\(watch.stderr)")
        let line = try #require(watch.stdout.split(separator: "\n").first { $0.contains("\"notification\":\"recovery\"") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["recovered"] as? Bool == true, "\(line)")
        #expect(object["trigger"] as? String == "vanished for 0.5 s" && object["port"] as? String == "1-42.1", "\(line)")
        let steps = try #require(object["steps"] as? [[String: Any]])
        #expect(steps.map { $0["step"] as? String } == ["power-cycle"] && steps.first?["outcome"] as? String == "recovered", "\(line)")
        #expect((object["after"] as? [String: Any])?["serial"] as? String == "WATCHREC", "\(line)")
        #expect((object["before"] as? [String: Any])?["serial"] as? String == "WATCHREC", "\(line)")
        var after = ""
        #expect(pollUntil(timeout: .seconds(5)) {
            after = HTTPFetch.get(port: metricsPort, "/metrics")?.body ?? ""
            return HTTPFetch.sample(#"accessory_recoveries_total{step="power-cycle",outcome="recovered"}"#, in: after) == 1
        }, "\(after)")
        #expect(HTTPFetch.sample("accessory_recovery_seconds_count", in: after) == 1, "\(after)")
        #expect(HTTPFetch.sample(#"accessory_disconnects_total{reason="unplugged"}"#, in: after).map { $0 >= 1 } == true)
        #expect(watch.stop(with: SIGTERM) == 0, "\(watch.stderr)")
    }

    @Test("--recover-up-to and --recover-vanished need --recover, and a step or a time out of range is bad usage")
    func usage() throws {
        for arguments in [["--recover-vanished", "3"], ["--recover", "--recover-up-to", "command"], ["--recover", "--recover-vanished", "0"]] {
            let result = try CLI.run(CLI.accessoryctl, ["watch"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
    }
}
