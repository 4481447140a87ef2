import Foundation

/// `accessoryctl list` against `lsusb`, as whole processes, on a testbed with N accessories.
struct ListBenchmark {
    var accessoryctl: String
    var devices: Int
    var runs: Int

    func run() throws -> [String] {
        let present = try SimulatorControl.send("list").split(separator: "\n").count
        for i in present..<devices { _ = try SimulatorControl.send("plug 1209:0200:LS\(i)") }
        let total = try SimulatorControl.send("list").split(separator: "\n").count
        let m = ProcessRunner.medians(runs: runs, [[accessoryctl, "list"], [accessoryctl, "list", "--json"], ["lsusb"]])
        let (ours, json, lsusb) = (m[0], m[1], m[2])
        precondition(ours.status == 0 && lsusb.status == 0 && json.status == 0, "a listing failed")
        func row(_ name: String, _ m: ProcessRunner.Measurement) -> String {
            String(format: "| %@ | %d | %.2f | %.2f | %.1f | %.2f |", name, total, m.wall * 1000, m.cpu * 1000,
                   Double(m.maxRSSKiB) / 1024, m.wall / lsusb.wall)
        }
        return [
            "| command | accessories | median wall ms | CPU ms | peak RSS MiB | wall ÷ lsusb |",
            "|---|---:|---:|---:|---:|---:|",
            row("accessoryctl list", ours), row("accessoryctl list --json", json), row("lsusb (baseline)", lsusb),
        ]
    }
}
