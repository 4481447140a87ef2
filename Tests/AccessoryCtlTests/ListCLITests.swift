import AccessoryTestSupport
import Foundation
import Testing

/// Whether `umockdev-run` is installed (scripts/setup installs it).
let hasUmockdevRun = FileManager.default.isExecutableFile(atPath: "/usr/bin/umockdev-run")

@Suite("accessoryctl list on real recordings")
struct ListCLITests {
    /// The third-party recordings in `../shared/corpus`, where present.
    static let recordings: [String] = Fixtures.files(in: SharedFolder.recordings).flatMap { Fixtures.files(in: URL(fileURLWithPath: $0), suffix: ".umockdev") }
    /// The package's own recordings, in `Tests/Fixtures`.
    static let ownRecordings: [String] = Fixtures.files(in: Fixtures.recordings, suffix: ".umockdev")

    /// The environment without any simulator around this test process, so that
    /// `umockdev-run` builds its own testbed from the dump.
    static var cleanEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["LD_PRELOAD", "UMOCKDEV_DIR", "ACCESSORY_SIM_SOCKET"] { env[key] = nil }
        return env
    }

    @Test("There are recordings to check", .needsCorpus)
    func corpusPresent() {
        #expect(Self.recordings.count >= 17)
    }

    @Test("list --json matches the package's own recording (the project's list check)",
          .enabled(if: hasUmockdevRun, "needs umockdev-run: run scripts/setup"), arguments: ownRecordings)
    func matchesOwnRecording(dump: String) throws {
        #expect(Self.ownRecordings.count == 1)
        let listed = try list(dump)
        let problems = ListCheck().problems(dump: try String(contentsOfFile: dump, encoding: .utf8), listJSON: listed)
        #expect(problems.isEmpty, "\(problems)")
        #expect(ListCheck().devices(inDump: try String(contentsOfFile: dump, encoding: .utf8)).count == 1, "hubs are left out")
        // The check can fail: a changed serial is found.
        let tampered = listed.replacingOccurrences(of: #""serial":"LB-0042""#, with: #""serial":"LB-0043""#)
        #expect(ListCheck().problems(dump: try String(contentsOfFile: dump, encoding: .utf8), listJSON: tampered).count == 1)
    }

    @Test("list --json matches each dump's sysfs values (the project's list check and check-list.py)",
          .needsCorpus, .needsContractTools, .enabled(if: hasUmockdevRun, "needs umockdev-run: run scripts/setup"),
          arguments: recordings)
    func matchesRecording(dump: String) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let listed = try list(dump)
        let out = dir.appendingPathComponent("list.json")
        try listed.write(to: out, atomically: true, encoding: .utf8)
        let problems = ListCheck().problems(dump: try String(contentsOfFile: dump, encoding: .utf8), listJSON: listed)
        #expect(problems.isEmpty, "\(problems)")
        let verdict = try CLI.run("/usr/bin/python3", [SharedFolder.tools.appendingPathComponent("check-list.py").path, dump, out.path])
        #expect(verdict.status == 0, "\(verdict.stdout)")
        #expect(verdict.stdout.hasPrefix("ok"))
    }

    /// `accessoryctl list --json` under `umockdev-run` with the dump; checks the exit status
    /// and a quiet stderr.
    private func list(_ dump: String) throws -> String {
        let r = try CLI.run("/usr/bin/umockdev-run", ["-d", dump, "--", CLI.accessoryctl, "list", "--json"], environment: Self.cleanEnvironment)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "notes go to stderr only when there is something to say: \(r.stderr)")
        return r.stdout
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
