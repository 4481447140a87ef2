import Foundation
import Testing

/// Whether `umockdev-run` is installed (scripts/setup installs it).
let hasUmockdevRun = FileManager.default.isExecutableFile(atPath: "/usr/bin/umockdev-run")

@Suite("accessoryctl list on real recordings")
struct ListCLITests {
    static let recordings: [String] = {
        let dir = CLI.shared.appendingPathComponent("corpus/usb-recordings")
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return folders.sorted().flatMap { folder in
            let sub = dir.appendingPathComponent(folder)
            return ((try? FileManager.default.contentsOfDirectory(atPath: sub.path)) ?? [])
                .filter { $0.hasSuffix(".umockdev") }.sorted().map { sub.appendingPathComponent($0).path }
        }
    }()

    /// The environment without any simulator around this test process, so that
    /// `umockdev-run` builds its own testbed from the dump.
    static var cleanEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["LD_PRELOAD", "UMOCKDEV_DIR", "ACCESSORY_SIM_SOCKET"] { env[key] = nil }
        return env
    }

    @Test("There are recordings to check")
    func corpusPresent() {
        #expect(Self.recordings.count >= 17)
    }

    @Test("list --json matches each dump's sysfs values (check-list.py)", .enabled(if: hasUmockdevRun, "needs umockdev-run: run scripts/setup"),
          arguments: recordings)
    func matchesRecording(dump: String) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run("/usr/bin/umockdev-run", ["-d", dump, "--", CLI.accessoryctl, "list", "--json"], environment: Self.cleanEnvironment)
        #expect(r.status == 0, "\(r.stderr)")
        let out = dir.appendingPathComponent("list.json")
        try r.stdout.write(to: out, atomically: true, encoding: .utf8)
        let verdict = try CLI.run("/usr/bin/python3", [CLI.shared.appendingPathComponent("tools/check-list.py").path, dump, out.path])
        #expect(verdict.status == 0, "\(verdict.stdout)")
        #expect(verdict.stdout.hasPrefix("ok"))
        #expect(r.stderr.isEmpty, "notes go to stderr only when there is something to say: \(r.stderr)")
    }

    @Test("Without USB, list prints an empty list, a one-line note on stderr, and exits 0")
    func noUSB() throws {
        var env = Self.cleanEnvironment
        env["ACCESSORYKIT_SYSFS_ROOT"] = "/nonexistent"
        let r = try CLI.run(CLI.accessoryctl, ["list", "--json"], environment: env)
        #expect(r.status == 0)
        #expect(r.stdout == "[]\n")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }
}
