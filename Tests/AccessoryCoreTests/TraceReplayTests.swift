import Foundation
import Testing
import AccessoryTestSupport
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("Trace replay")
struct TraceReplayTests {
    /// Replays `records` and returns the JSON Lines output, final line included.
    private func replayOutput(_ records: [TraceRecord]) -> String {
        var replayer = TracePlayback()
        var output = ReplayOutput()
        replayer.replay(records) { output.append($0) }
        output.appendFinal(replayer.registry.accessories)
        return output.string
    }

    static let contractConnected =
        #"{"notification":"connected","connectionID":1,"bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}"#
    static let contractDisconnected =
        #"{"notification":"disconnected","connectionID":1,"bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","reason":"unplugged"}"#
    static let contractFinal =
        #"{"final":[{"connectionID":2,"bus":1,"address":6,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}]}"#

    @Test("The contract's example lines, byte for byte")
    func contractExamples() throws {
        let trace = """
            {"t":0.0,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","protocols":["org.example.loopback"]}
            {"t":2.5,"event":"remove","bus":1,"address":5,"port":"1-1.4"}
            {"t":3.0,"event":"add","bus":1,"address":6,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}
            {"t":4.0,"event":"snapshot","devices":[{"bus":1,"address":6,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}]}

            """
        let output = replayOutput(try TraceReader.readAll(string: trace).records)
        #expect(output.split(separator: "\n").map(String.init) == [
            Self.contractConnected, Self.contractDisconnected,
            // The re-enumeration 0.5 s later names the connection it continues.
            Self.contractConnected.replacingOccurrences(of: #""connectionID":1,"bus":1,"address":5"#,
                                                        with: #""connectionID":2,"bus":1,"address":6"#)
                .replacingOccurrences(of: "}", with: #","previous":1}"#),
            Self.contractFinal,
        ])
        #expect(output.hasSuffix("\n"))
    }

    @Test("The package's own article on the format shows the same example lines")
    func examplesAreTheArticles() throws {
        let article = Fixtures.root.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AccessoryTraces/AccessoryTraces.docc/TraceFormat.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        for line in [Self.contractConnected, Self.contractDisconnected, Self.contractFinal] {
            #expect(text.contains("    " + line + "\n"), "TraceFormat.md has \(line)")
        }
    }

    @Test("The example lines above are the contract's own", .needsContracts)
    func examplesAreTheContracts() throws {
        let text = try String(contentsOf: SharedFolder.root.appendingPathComponent("TRACE-FORMAT.md"), encoding: .utf8)
        for line in [Self.contractConnected, Self.contractDisconnected, Self.contractFinal] {
            #expect(text.contains("    " + line + "\n"), "TRACE-FORMAT.md has \(line)")
        }
    }

    @Test("The package's article names every field and value the contract names", .needsContracts)
    func articleCoversTheContract() throws {
        let contract = try String(contentsOf: SharedFolder.root.appendingPathComponent("TRACE-FORMAT.md"), encoding: .utf8)
        let article = try String(
            contentsOf: Fixtures.root.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Sources/AccessoryTraces/AccessoryTraces.docc/TraceFormat.md"), encoding: .utf8)
        // Every code span of the contract (field names, event names, reasons, examples).
        let spans = contract.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        #expect(spans.count > 40)
        for span in Set(spans) { #expect(article.contains("`\(span)`"), "the article lacks `\(span)`") }
    }

    @Test("A t too large for a Duration is held at its limit, not a trap (a fuzzer's finding)")
    func hugeT() throws {
        #expect(TraceRecord(t: 1e300, event: .sleep).time == .seconds(4_000_000_000))
        #expect(TraceRecord(t: 2.5, event: .sleep).time == .milliseconds(2500))
        #expect(TraceRecord(t: -1, event: .sleep).time == nil)
        var replayer = TracePlayback()
        let d = AccessoryDescriptor(bus: 1, address: 5, port: "1-1", vendor: 0x1209, product: 1, serial: "SN1")
        _ = replayer.apply(TraceRecord(t: 1, event: .added(d)))
        let events = replayer.apply(TraceRecord(t: 2.8e66, event: .removed(DeviceRemoval(bus: 1, address: 5, port: "1-1"))))
        #expect(events.count == 1)
        #expect(replayer.registry.count == 0)
    }

    @Test("The contract's three-line trace ends with an empty registry")
    func contractTrace() throws {
        let trace = """
            {"t":0.0,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1","protocols":["org.example.loopback"]}
            {"t":2.5,"event":"remove","bus":1,"address":5,"port":"1-1.4"}
            {"t":3.0,"event":"snapshot","devices":[]}
            """
        #expect(replayOutput(try TraceReader.readAll(string: trace).records)
            == [Self.contractConnected, Self.contractDisconnected, #"{"final":[]}"#, ""].joined(separator: "\n"))
    }

    @Test("An eviction carries its evidence; unknown fields are left out")
    func evidenceAndUnknowns() {
        let ghost = TraceTestSupport.descriptor(5, port: "1-1")
        let other = TraceTestSupport.descriptor(5, port: "1-1", product: 0x0002, serial: "SN2")
        let output = replayOutput([
            TraceRecord(t: 0, event: .added(AccessoryDescriptor(bus: 2, address: nil, port: "2-3"))),
            TraceRecord(t: 0, event: .added(ghost)),
            TraceRecord(t: 1, event: .snapshot([other, AccessoryDescriptor(bus: 2, address: nil, port: "2-3")])),
        ])
        #expect(output == """
            {"notification":"connected","connectionID":1,"bus":2,"port":"2-3"}
            {"notification":"connected","connectionID":2,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1"}
            {"notification":"disconnected","connectionID":2,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1","reason":"ghost-evicted","evidence":"bus 1 address 5 now belongs to 1209:0002 serial SN2"}
            {"notification":"connected","connectionID":3,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0002","serial":"SN2"}
            {"final":[{"connectionID":1,"bus":2,"port":"2-3"},{"connectionID":3,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0002","serial":"SN2"}]}

            """)
        #expect(ReplayOutput.line(for: .disconnected(Accessory(connectionID: ConnectionID(rawValue: 9), descriptor: ghost), .shutdown))
            == #"{"notification":"disconnected","connectionID":9,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0001","serial":"SN1","reason":"shutdown"}"#)
        #expect(ReplayOutput.finalLine([]) == #"{"final":[]}"#)
    }

    @Test("At the end, events after the last snapshot are reconciled against it")
    func finalReconcile() {
        let a = TraceTestSupport.descriptor(5, port: "1-1", serial: "A")
        let b = TraceTestSupport.descriptor(6, port: "1-2", serial: "B")
        var replayer = TracePlayback()
        #expect(replayer.apply(TraceRecord(t: 0, event: .snapshot([a]))).count == 1)
        #expect(replayer.apply(TraceRecord(t: 1, event: .added(b))).count == 1)
        #expect(replayer.apply(TraceRecord(t: 2, event: .removed(DeviceRemoval(bus: 1, address: 5, port: "1-1")))).count == 1)
        let end = replayer.finish()
        #expect(end.map { ReplayOutput.line(for: $0) } == [
            #"{"notification":"disconnected","connectionID":2,"bus":1,"address":6,"port":"1-2","vendor":"1209","product":"0001","serial":"B","reason":"ghost-evicted","evidence":"absent from the OS device list"}"#,
            // A's own connection ended at t 2 (its removal); the snapshot's A continues it.
            #"{"notification":"connected","connectionID":3,"bus":1,"address":5,"port":"1-1","vendor":"1209","product":"0001","serial":"A","previous":1}"#,
        ])
        #expect(replayer.registry.accessories.map(\.descriptor) == [a])
        #expect(replayer.finish().isEmpty, "finishing twice does nothing more")

        // Without a snapshot, the registry is left as the events made it.
        var bare = TracePlayback()
        _ = bare.apply(.added(b))
        #expect(bare.finish().isEmpty && bare.registry.count == 1)
    }

    @Test("Generated traces with faults: the invariants hold and the end equals the last snapshot",
          arguments: Array(1...12) as [UInt64])
    func invariants(seed: UInt64) {
        let config = TraceGenerator.Configuration(
            seed: seed, events: 3000, devices: 20, buses: 2, snapshotInterval: 250,
            sleepProbability: 0.01, overflowProbability: 0.01)
        let faults = FaultInjector.Configuration(
            drop: 0.1, duplicate: 0.1, reorder: 0.1, delay: 0.1, wrapAddresses: seed.isMultiple(of: 3))
        let records = FaultInjector.inject(faults, seed: seed, into: TraceGenerator(config))
        var replayer = TracePlayback()
        var live: [ConnectionID: Accessory] = [:]
        var lastID: UInt64 = 0
        var seen: Set<ConnectionID> = []
        replayer.replay(records) { event in
            switch event {
            case .connected(let a):
                #expect(a.connectionID.rawValue > lastID && !seen.contains(a.connectionID))
                lastID = a.connectionID.rawValue
                seen.insert(a.connectionID)
                live[a.connectionID] = a
            case .disconnected(let a, _):
                #expect(live.removeValue(forKey: a.connectionID) != nil)
            }
        }
        #expect(Set(live.keys) == Set(replayer.registry.accessories.map(\.connectionID)))
        guard case .snapshot(let truth) = records.last?.event else {
            Issue.record("a generated trace ends with a snapshot")
            return
        }
        #expect(Set(replayer.registry.accessories.map(\.descriptor)) == Set(truth))
    }

    /// Writes a generated trace with faults and its replay output to `dir`; returns both paths.
    private func writeGeneratedReplay(in dir: URL) throws -> (trace: String, output: String) {
        let tracePath = dir.appendingPathComponent("gen.trace").path
        let outPath = dir.appendingPathComponent("replay.jsonl").path

        let traceFD = open(tracePath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var writer = TraceWriter(sink: FileDescriptorSink(fileDescriptor: traceFD), flushesEachRecord: false)
        try writer.writeHeader(TraceHeader(source: "TraceReplayTests"))
        let generated = TraceGenerator(.init(
            seed: 7, events: 20_000, devices: 100, buses: 4, snapshotInterval: 1000,
            sleepProbability: 0.005, overflowProbability: 0.005))
        var injector = FaultInjector(.init(drop: 0.05, duplicate: 0.05, reorder: 0.05, delay: 0.05), seed: 7)
        for record in generated { try injector.push(record) { try writer.write($0) } }
        try injector.finish { try writer.write($0) }
        try writer.flush()
        close(traceFD)

        var reader = try TraceReader(path: tracePath)
        let outFD = open(outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var sink = FileDescriptorSink(fileDescriptor: outFD)
        var replayer = TracePlayback()
        var output = ReplayOutput()
        try replayer.replay(&reader) { event in
            output.append(event)
            if output.bytes.count > 1 << 16 { try output.write(to: &sink) }
        }
        output.appendFinal(replayer.registry.accessories)
        try output.write(to: &sink)
        close(outFD)
        return (tracePath, outPath)
    }

    @Test("The project's replay check accepts the replay of a generated trace file, and refuses broken ones")
    func ownChecker() throws {
        let dir = try TraceTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (tracePath, outPath) = try writeGeneratedReplay(in: dir)
        let verdict = try ReplayCheck().check(tracePath: tracePath, outputPath: outPath)
        #expect(verdict.isOK, "\(verdict.problems.prefix(3))")
        #expect(verdict.connectionIDs > 100 && verdict.ghostEvictions > 0)

        // The check can fail: a reused ID, a lost disconnect, an unknown reason, a wrong final.
        let trace = try String(contentsOfFile: tracePath, encoding: .utf8)
        var lines = try String(contentsOfFile: outPath, encoding: .utf8).split(separator: "\n").map(String.init)
        let firstConnect = try #require(lines.firstIndex { $0.contains(#""notification":"connected""#) })
        var reused = lines
        reused.insert(lines[firstConnect], at: firstConnect + 1)
        #expect(ReplayCheck().check(trace: trace, output: reused.joined(separator: "\n")).problems.contains { $0.contains("reused") })
        let firstDisconnect = try #require(lines.firstIndex { $0.contains(#""notification":"disconnected""#) })
        var badReason = lines
        badReason[firstDisconnect] = badReason[firstDisconnect].replacingOccurrences(of: #""reason":""#, with: #""reason":"x"#)
        #expect(ReplayCheck().check(trace: trace, output: badReason.joined(separator: "\n")).problems.contains { $0.contains("unknown reason") })
        lines.remove(at: firstDisconnect)
        #expect(!ReplayCheck().check(trace: trace, output: lines.joined(separator: "\n")).isOK)
        lines[lines.count - 1] = #"{"final":[]}"#
        #expect(!ReplayCheck().check(trace: trace, output: lines.joined(separator: "\n")).isOK)
    }

    @Test("check-replay.py accepts the replay of a generated trace file", .needsContractTools)
    func externalChecker() throws {
        let checker = SharedFolder.tools.appendingPathComponent("check-replay.py")
        let dir = try TraceTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (tracePath, outPath) = try writeGeneratedReplay(in: dir)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [checker.path, tracePath, outPath]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "check-replay.py: \(said)")
        #expect(said.hasPrefix("ok"), "check-replay.py: \(said)")
    }
}
