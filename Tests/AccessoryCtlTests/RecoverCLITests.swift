import AccessoryTestSupport
import Foundation
import Testing

extension LiveCLITests {
    @Test("recover climbs to the step that cures a wedge (exit 0, --json before and after linked), fails with every step named (exit 1), and bad usage exits 64")
    func recoverCommand() throws {
        let w = try SimulatorControl.ctl("plug-hub", "1-47", "2")
        defer { _ = try? SimulatorControl.ctl("unplug", "\(w[1]):\(w[2])") }
        let device = try SimulatorControl.plug("1209:00f4:RECOVERME", port: "1-47.1")
        _ = try SimulatorControl.ctl("wedge", device.id, "--cured-by", "reauthorize")

        let run = try CLI.ctl("recover", "1209:00f4", "--json")
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["recovered"] as? Bool == true)
        let steps = try #require(object["steps"] as? [[String: Any]])
        #expect(steps.map { $0["step"] as? String } == ["reset", "reauthorize"], "\(steps)")
        #expect(steps.last?["outcome"] as? String == "recovered")
        let before = try #require(object["before"] as? [String: Any])
        let after = try #require(object["after"] as? [String: Any])
        #expect(before["serial"] as? String == "RECOVERME" && after["serial"] as? String == "RECOVERME")
        #expect(after["port"] as? String == "1-47.1")
        #expect(after["address"] as? Int != before["address"] as? Int, "a reauthorization re-enumerates")

        let now = try SimulatorControl.device(serial: "RECOVERME")
        defer { _ = try? SimulatorControl.ctl("unplug", (try? SimulatorControl.device(serial: "RECOVERME").id) ?? now.id) }
        _ = try SimulatorControl.ctl("wedge", now.id, "--cured-by", "never")
        let failed = try CLI.ctl("recover", "1-47.1", "--up-to", "reauthorize")
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("reset: ") && failed.stdout.contains("reauthorize: "), "\(failed.stdout)")
        #expect(failed.stdout.contains("not recovered: 1209:00f4 on 1-47.1"), "\(failed.stdout)")

        #expect(try CLI.ctl("recover", "1209:00f4", "--up-to", "bogus").status == 64)
        #expect(try CLI.ctl("recover", "1209:00f4", "--up-to", "command").status == 64, "command needs --command")
    }
}
