import Foundation

/// The project's own check of `accessoryctl replay TRACE --json` output against the trace
/// format's contract and the design's invariants: IDs are positive, strictly increasing and
/// never reused; each ID connects once before at most one disconnect; every reason is known;
/// the `final` line equals what the notification log leaves connected; and when the trace has
/// snapshots, the final registry is the last snapshot's set of devices.
///
/// It reads both sides as plain JSON (Foundation's parser), not with the package's own trace
/// reader, so a bug there cannot hide itself.
public struct ReplayCheck: Sendable {
    public struct Verdict: Sendable, Equatable {
        public var problems: [String]
        public var connectionIDs: Int
        public var ghostEvictions: Int
        public var isOK: Bool { problems.isEmpty }

        public init(problems: [String], connectionIDs: Int, ghostEvictions: Int) {
            self.problems = problems
            self.connectionIDs = connectionIDs
            self.ghostEvictions = ghostEvictions
        }
    }

    public init() {}

    public func check(trace: String, output: String) -> Verdict {
        var verdict = Verdict(problems: [], connectionIDs: 0, ghostEvictions: 0)
        let rows = output.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
        guard let last = rows.last else {
            verdict.problems.append("no output")
            return verdict
        }
        var notifications: [[String: Any]] = []
        for (index, row) in rows.dropLast().enumerated() {
            guard let object = Self.object(row) else {
                verdict.problems.append("output line \(index + 1) is not a JSON object")
                return verdict
            }
            notifications.append(object)
        }
        guard let finalObject = Self.object(last), let final = finalObject["final"] as? [[String: Any]] else {
            verdict.problems.append("the last line has no \"final\" array")
            return verdict
        }

        var live: Set<Int> = []
        var seen: Set<Int> = []
        var lastID = 0
        for note in notifications {
            guard let id = note["connectionID"] as? Int, id > 0 else {
                verdict.problems.append("bad connectionID \(String(describing: note["connectionID"]))")
                continue
            }
            switch note["notification"] as? String {
            case "connected":
                if seen.contains(id) { verdict.problems.append("ID \(id) connected twice or reused") }
                if id <= lastID { verdict.problems.append("ID \(id) is not above the previous ID \(lastID)") }
                lastID = max(lastID, id)
                seen.insert(id)
                live.insert(id)
            case "disconnected":
                if live.remove(id) == nil { verdict.problems.append("ID \(id) disconnected while not connected") }
                switch note["reason"] as? String {
                case "unplugged", "shutdown": break
                case "ghost-evicted": verdict.ghostEvictions += 1
                case let other: verdict.problems.append("ID \(id) has an unknown reason \(other ?? "(none)")")
                }
            case let other:
                verdict.problems.append("unknown notification \(other ?? "(none)")")
            }
        }
        verdict.connectionIDs = seen.count
        let finalIDs = Set(final.compactMap { $0["connectionID"] as? Int })
        if finalIDs != live || finalIDs.count != final.count {
            verdict.problems.append("the final registry \(finalIDs.sorted().prefix(10)) differs from the notification log's \(live.sorted().prefix(10))")
        }
        let snapshots = trace.split(whereSeparator: \.isNewline).compactMap(Self.object).filter { $0["event"] as? String == "snapshot" }
        if let lastSnapshot = snapshots.last {
            let want = ((lastSnapshot["devices"] as? [[String: Any]]) ?? []).map(Self.deviceKey).sorted()
            let got = final.map(Self.deviceKey).sorted()
            if want != got {
                verdict.problems.append(
                    "the final registry differs from the last snapshot: \(want.count) devices wanted, \(got.count) found; "
                        + "missing \(want.filter { !got.contains($0) }.prefix(2)), extra \(got.filter { !want.contains($0) }.prefix(2))")
            }
        }
        return verdict
    }

    /// Reads a file pair, as check-replay.py does.
    public func check(tracePath: String, outputPath: String) throws -> Verdict {
        check(trace: try String(contentsOfFile: tracePath, encoding: .utf8), output: try String(contentsOfFile: outputPath, encoding: .utf8))
    }

    private static func object(_ line: Substring) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// What identifies a device row: bus, address, port, vendor, product, serial.
    private static func deviceKey(_ d: [String: Any]) -> String {
        ["bus", "address", "port", "vendor", "product", "serial"].map { key in
            d[key].map { "\($0)" } ?? "-"
        }.joined(separator: "|")
    }
}
