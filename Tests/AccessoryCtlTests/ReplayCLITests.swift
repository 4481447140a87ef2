import AccessoryCore
import AccessoryTraces
import AccessoryTestSupport
import Foundation
import Testing

@Suite("accessoryctl replay and import")
struct ReplayCLITests {
    static let fixture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/eight-hours-asleep.jsonl").path
    /// The project's replay check on a trace and its replay output.
    static func check(trace: String, output: String) throws -> ReplayCheck.Verdict {
        ReplayCheck().check(trace: try String(contentsOfFile: trace, encoding: .utf8), output: output)
    }

    /// The team's check-replay.py on a trace and its replay output; its one-line verdict.
    static func externalCheck(trace: String, output: String) throws -> CLI.Result {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("replay.jsonl")
        try output.write(to: out, atomically: true, encoding: .utf8)
        return try CLI.run("/usr/bin/python3", [SharedFolder.tools.appendingPathComponent("check-replay.py").path, trace, out.path])
    }

    @Test("The eight-hours trace replays to the live device, ghosts evicted, and passes the replay check")
    func eightHours() throws {
        let r = try CLI.ctl("replay", Self.fixture, "--json")
        #expect(r.status == 0)
        let verdict = try Self.check(trace: Self.fixture, output: r.stdout)
        #expect(verdict == ReplayCheck.Verdict(problems: [], connectionIDs: 5, ghostEvictions: 3))
        #expect(r.stdoutLines.last == #"{"final":[{"connectionID":5,"bus":1,"address":12,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1"}]}"#)
    }

    @Test("The eight-hours trace's replay passes the team's check-replay.py too", .needsContractTools)
    func eightHoursExternal() throws {
        let r = try CLI.ctl("replay", Self.fixture, "--json")
        let verdict = try Self.externalCheck(trace: Self.fixture, output: r.stdout)
        #expect(verdict.status == 0, "\(verdict.stdout)")
        #expect(verdict.stdout.hasPrefix("ok ids=5 ghost-evicted=3"))
    }

    @Test("Generated traces with faults pass the replay check (and check-replay.py where ../shared is)", arguments: [1, 2, 3] as [UInt64])
    func generated(seed: UInt64) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("gen.jsonl")
        var sink = ByteBufferSink()
        var writer = TraceWriter(sink: sink, flushesEachRecord: false)
        try writer.writeHeader()
        for record in TraceGenerator(.init(seed: seed, events: 3000, devices: 12, snapshotInterval: 50)) {
            try writer.write(record)
        }
        sink = writer.sink
        try Data(sink.bytes).write(to: trace)
        // (wrap renumbers the snapshots too, so check-replay.py would compare with the wrong truth)
        for faults in [nil, "drop=0.2,dup=0.1,reorder=0.2,delay=0.1", "drop=0.05,dup=0.3"] {
            var args = ["replay", trace.path, "--json"]
            if let faults { args += ["--faults", faults, "--seed", String(seed)] }
            let r = try CLI.run(CLI.accessoryctl, args)
            #expect(r.status == 0, "\(r.stderr)")
            let verdict = try Self.check(trace: trace.path, output: r.stdout)
            #expect(verdict.isOK, "faults \(faults ?? "none"): \(verdict.problems.prefix(3))")
            if SharedFolder.hasTools {
                let external = try Self.externalCheck(trace: trace.path, output: r.stdout)
                #expect(external.status == 0, "faults \(faults ?? "none"): \(external.stdout)")
            }
        }
    }

    @Test("A malformed line is an error with file, line and reason, and exit status 1")
    func malformed() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("bad.jsonl")
        try "{\"t\":0,\"event\":\"add\",\"bus\":1,\"address\":5,\"port\":\"1-1\"}\n{\"t\":1,\"event\":\"remove\"}\n"
            .write(to: bad, atomically: true, encoding: .utf8)
        let r = try CLI.ctl("replay", bad.path, "--json")
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(bad.path):2:"))
        #expect(r.stderr.contains("missing required field"))
    }

    @Test("Read on a thread of its own or not (taskset -c 0), a long trace's replay is the same: every record before a bad line 3,001 is played, then the error; a cut last line is a warning")
    func prefetched() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lines = TraceGenerator(.init(seed: 5, events: 5000, devices: 12, snapshotInterval: 200)).map(\.jsonLine)
        let good = dir.appendingPathComponent("good.jsonl"), bad = dir.appendingPathComponent("bad.jsonl")
        let cut = dir.appendingPathComponent("cut.jsonl")
        try (lines.prefix(3000).joined(separator: "\n") + "\n").write(to: good, atomically: true, encoding: .utf8)
        try ((lines.prefix(3000) + [#"{"t":1,"event":"remove"}"#] + lines.dropFirst(3000)).joined(separator: "\n") + "\n")
            .write(to: bad, atomically: true, encoding: .utf8)
        try (lines.joined(separator: "\n") + "\n" + #"{"t":99,"event":"ad"#).write(to: cut, atomically: true, encoding: .utf8)
        // What the records before the bad line print: played here, as read from the text.
        var playback = TracePlayback()
        var output = ReplayOutput()
        for record in try TraceReader.readAll(string: try String(contentsOf: good, encoding: .utf8), name: "good").records {
            for event in playback.apply(record) { output.append(event) }
        }
        let played = output.string.split(separator: "\n").map(String.init)
        let all = dir.appendingPathComponent("all.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: all, atomically: true, encoding: .utf8)
        let whole = try CLI.ctl("replay", all.path, "--json")
        var runs: [(String, [String])] = [("threaded", [CLI.accessoryctl])]
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset") { runs.append(("one processor", ["/usr/bin/taskset", "-c", "0", CLI.accessoryctl])) }
        for (name, command) in runs {
            let r = try CLI.run(command[0], Array(command.dropFirst()) + ["replay", bad.path, "--json"])
            #expect(r.status == 1, "\(name)")
            #expect(r.stderr.contains("\(bad.path):3001: missing required field 'bus'"), "\(name): \(r.stderr)")
            #expect(played.count > 1000 && Array(r.stdoutLines.prefix(played.count)) == played, "\(name)")
            let c = try CLI.run(command[0], Array(command.dropFirst()) + ["replay", cut.path, "--json"])
            #expect(c.status == 0 && c.stderr.contains("warning: \(cut.path):\(lines.count + 1):"), "\(name): \(c.stderr)")
            #expect(c.stdout == whole.stdout, "\(name)")
        }
    }

    @Test("A truncated last line is a warning; the rest is used and the exit status is 0")
    func truncated() throws {
        let text = try String(contentsOfFile: Self.fixture, encoding: .utf8)
        let cut = String(text.dropLast(40))
        let r = try CLI.ctl("replay", "-", "--json", stdin: cut)
        #expect(r.status == 0)
        #expect(r.stderr.contains("warning: <stdin>:13:"))
        // 7 notifications before the cut line; then, as the contract asks, the registry is
        // reconciled against the last snapshot that survived (the empty one), evicting ID 4.
        #expect(r.stdoutLines.count == 9)
        #expect(r.stdoutLines.last == #"{"final":[]}"#)
    }

    @Test("A missing file is a clear error")
    func missingFile() throws {
        let r = try CLI.ctl("replay", "/nonexistent/trace.jsonl")
        #expect(r.status == 1)
        #expect(r.stderr.contains("/nonexistent/trace.jsonl"))
    }

    @Test("Bad --faults is a usage error")
    func badFaults() throws {
        let r = try CLI.ctl("replay", Self.fixture, "--faults", "drop=2")
        #expect(r.status == 64)
        #expect(r.stderr.contains("drop"))
    }

    @Test("Every udevadm log in the corpus imports; other logs are refused clearly", .needsCorpus)
    func corpusImports() throws {
        #expect(try importsOrRefuses(folder: SharedFolder.hotplugLogs) == 3)
    }

    @Test("Every udevadm sample of the package imports; other samples are refused clearly")
    func fixtureImports() throws {
        #expect(try importsOrRefuses(folder: Fixtures.hotplugLogs) == 3)
    }

    /// Runs `import udevadm` on every file of a folder, and `replay` on what it prints.
    /// Returns how many imported.
    private func importsOrRefuses(folder: URL) throws -> Int {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files.count >= 7)
        var imported = 0
        for file in files {
            let path = folder.appendingPathComponent(file).path
            let r = try CLI.ctl("import", "udevadm", path)
            if file.contains("udevadm-monitor") {
                #expect(r.status == 0, "\(file): \(r.stderr)")
                let trace = try TraceReader.readAll(string: r.stdout, name: file)
                #expect(!trace.records.isEmpty, "\(file)")
                let replay = try CLI.ctl("replay", "-", "--json", stdin: r.stdout)
                #expect(replay.status == 0)
                imported += 1
            } else {
                #expect(r.status == 1, "\(file) is not a udevadm log")
                #expect(r.stderr.contains("not a udevadm monitor log"), "\(file): \(r.stderr)")
            }
        }
        return imported
    }

    @Test("import -o writes a trace that replays: a serial adapter's remove and re-add")
    func importToFile() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("serial.jsonl").path
        let log = Fixtures.path("hotplug-logs/udevadm-monitor-plain-serial-remove-add.log")
        let r = try CLI.ctl("import", "udevadm", log, "-o", out)
        #expect(r.status == 0)
        let replay = try CLI.ctl("replay", out, "--json")
        #expect(replay.stdoutLines.count == 2)
        #expect(replay.stdoutLines.first?.contains(#""notification":"connected","connectionID":1,"bus":2,"#) == true)
        #expect(replay.stdoutLines.first?.contains(#""port":"2-3.1""#) == true)
    }

    @Test("import -o of a file that is not a log fails and leaves no trace file")
    func importRefusalWritesNothing() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.jsonl").path
        let r = try CLI.ctl("import", "udevadm", Fixtures.path("hotplug-logs/lsusb.txt"), "-o", out)
        #expect(r.status == 1)
        #expect(r.stderr.contains("it looks like lsusb output"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
