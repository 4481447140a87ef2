/// The exposition read back: its `# TYPE` and `# HELP` lines and its samples, as a test
/// (not Prometheus) parses the text format 0.0.4.
struct Exposition {
    struct Sample: Hashable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    var types: [String: String] = [:]
    var helps: [String: String] = [:]
    var samples: [Sample] = []
    /// Lines that are neither a comment nor a sample.
    var malformed: [String] = []

    init(_ bytes: [UInt8]) {
        self.init(String(decoding: bytes, as: UTF8.self))
    }

    init(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let words = line.split(separator: " ", maxSplits: 3)
            if line.hasPrefix("# TYPE "), words.count == 4 {
                types[String(words[2])] = String(words[3])
            } else if line.hasPrefix("# HELP "), words.count == 4 {
                helps[String(words[2])] = String(words[3])
            } else if let sample = Self.sample(String(line)) {
                samples.append(sample)
            } else {
                malformed.append(String(line))
            }
        }
    }

    /// `name{a="x",b="y"} value`, or `name value`.
    static func sample(_ line: String) -> Sample? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else {
            return Sample(name: String(series), labels: [:], value: value)
        }
        guard series.hasSuffix("}") else { return nil }
        var labels: [String: String] = [:]
        let inside = series[series.index(after: brace)..<series.index(before: series.endIndex)]
        for pair in inside.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[1].hasPrefix("\""), parts[1].hasSuffix("\"") else { return nil }
            labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }

    /// The value of the one sample named `name` with exactly `labels`, if there is one.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let found = samples.filter { $0.name == name && $0.labels == labels }
        return found.count == 1 ? found[0].value : nil
    }
}
