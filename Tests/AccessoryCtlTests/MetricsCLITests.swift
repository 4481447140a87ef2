import AccessoryTestSupport
import Foundation
import Testing

/// Where promtool and prometheus are (scripts/setup installs Debian's `prometheus`).
enum PrometheusTools {
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/bin/\(name)"]).first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static let promtool = find("promtool")
    static let prometheus = find("prometheus")
}

/// `watch --metrics` under accessory-sim: scrapes over HTTP as plugs and unplugs happen,
/// promtool's check of the scrape, and a real Prometheus server scraping it.
@Suite("accessoryctl watch --metrics (accessory-sim)", .serialized,
       .enabled(if: SimulatorControl.isActive, "needs accessory-sim: run scripts/test"))
struct MetricsCLITests {
    /// A `watch --metrics 127.0.0.1:0` and the port it serves on (from its stderr).
    static func startWatch(in dir: URL) throws -> (Background, UInt16) {
        let watch = try Background(CLI.accessoryctl, ["watch", "--json", "--metrics", "127.0.0.1:0"] + LiveCLITests.interval, in: dir)
        var port: UInt16?
        _ = pollUntil {
            let text = watch.stderr
            guard let range = text.range(of: "serving metrics at http://127.0.0.1:") else { return false }
            port = UInt16(text[range.upperBound...].prefix { $0.isNumber })
            return port != nil
        }
        guard let port else {
            _ = watch.stop(with: SIGTERM)
            throw SimulatorControl.Failure(description: "watch --metrics never said its port: \(watch.stderr)")
        }
        return (watch, port)
    }

    static func scrape(_ port: UInt16) -> String {
        HTTPFetch.get(port: port, "/metrics")?.body ?? ""
    }

    @Test("watch --metrics serves /metrics; a plug and an unplug move the counters, stuck scrapers or not; nothing names a serial or an address")
    func countersFollowPlugs() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (watch, port) = try Self.startWatch(in: dir)
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"SN1\"") })
        let response = try #require(HTTPFetch.get(port: port, "/metrics"))
        #expect(response.status == 200)
        #expect(response.headers.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(HTTPFetch.get(port: port, "/")?.status == 404)
        let before = response.body
        #expect(HTTPFetch.sample(#"accessory_connected{vendor="1209",product="0001"}"#, in: before) == 1)
        let arrivedBefore = HTTPFetch.sample(#"accessory_hotplug_events_total{kind="arrived"}"#, in: before) ?? -1
        let leftBefore = HTTPFetch.sample(#"accessory_hotplug_events_total{kind="left"}"#, in: before) ?? -1
        let unpluggedBefore = HTTPFetch.sample(#"accessory_disconnects_total{reason="unplugged"}"#, in: before) ?? -1

        // Scrapers that send half a request and stop hold up neither watch's lines nor the
        // scrapes that follow (each waits up to 5 s on its own thread).
        let stuck = (0..<4).compactMap { _ in HTTPFetch.halfOpen(port: port) }
        defer { stuck.forEach { close($0) } }
        #expect(stuck.count == 4)
        let clock = ContinuousClock()
        let start = clock.now
        let added = try SimulatorControl.plug("1209:00c1:METRICS-SERIAL")
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"METRICS-SERIAL\"") })
        let plugged = Self.scrape(port)
        #expect(clock.now - start < .seconds(3), "a plug and a scrape took \(clock.now - start) beside stuck scrapers")
        #expect(HTTPFetch.sample(#"accessory_connected{vendor="1209",product="00c1"}"#, in: plugged) == 1)
        #expect((HTTPFetch.sample(#"accessory_hotplug_events_total{kind="arrived"}"#, in: plugged) ?? 0) >= arrivedBefore + 1)
        try SimulatorControl.ctl("unplug", added.id)
        #expect(watch.waitForOutput { $0.contains("\"reason\":\"unplugged\"") })
        var after = ""
        #expect(pollUntil {
            after = Self.scrape(port)
            // At least: other suites plug and unplug on the same simulator meanwhile.
            return (HTTPFetch.sample(#"accessory_disconnects_total{reason="unplugged"}"#, in: after) ?? 0) >= unpluggedBefore + 1
                && (HTTPFetch.sample(#"accessory_hotplug_events_total{kind="left"}"#, in: after) ?? 0) >= leftBefore + 1
        }, "\(after)")
        #expect(HTTPFetch.sample(#"accessory_connected{vendor="1209",product="00c1"}"#, in: after) == 0)
        #expect(HTTPFetch.sample("accessory_sessions_open", in: after) == 0)
        #expect(HTTPFetch.sample(#"accessory_recoveries_total{step="reset",outcome="recovered"}"#, in: after) == 0)
        #expect(!after.contains("METRICS-SERIAL") && !after.contains("1-1") && !after.contains("address"))
        #expect(watch.stop(with: SIGTERM) == 0, "\(watch.stderr)")
    }

    @Test("promtool check metrics passes the scrape",
          .enabled(if: PrometheusTools.promtool != nil, "needs promtool (Debian package prometheus; scripts/setup installs it)"))
    func promtoolChecksTheScrape() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (watch, port) = try Self.startWatch(in: dir)
        defer { _ = watch.stop(with: SIGTERM) }
        let added = try SimulatorControl.plug("1209:00c2:PROMTOOL")
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"PROMTOOL\"") })
        try SimulatorControl.ctl("unplug", added.id)
        #expect(watch.waitForOutput { $0.contains("\"reason\":\"unplugged\"") })
        let scrape = Self.scrape(port)
        #expect(scrape.contains("accessory_disconnects_total"))
        let result = try CLI.run(try #require(PrometheusTools.promtool), ["check", "metrics"], stdin: Data(scrape.utf8))
        #expect(result.status == 0, "promtool: \(result.stdout) \(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr.isEmpty, "promtool: \(result.stdout) \(result.stderr)")
    }

    @Test("a real Prometheus scrapes watch --metrics, and its query API shows the counters",
          .enabled(if: PrometheusTools.prometheus != nil, "needs prometheus (Debian package prometheus; scripts/setup installs it)"))
    func prometheusScrapes() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (watch, port) = try Self.startWatch(in: dir)
        defer { _ = watch.stop(with: SIGTERM) }
        let promPort = try #require(HTTPFetch.freePort())
        let config = dir.appendingPathComponent("prometheus.yml")
        try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: accessoryctl
                static_configs:
                  - targets: ["127.0.0.1:\(port)"]
            """.write(to: config, atomically: true, encoding: .utf8)
        let storage = dir.appendingPathComponent("data")
        let prometheus = try Background(try #require(PrometheusTools.prometheus), [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(storage.path)",
            "--web.listen-address=127.0.0.1:\(promPort)", "--log.level=warn",
        ], in: dir)
        defer { _ = prometheus.stop(with: SIGTERM) }

        let added = try SimulatorControl.plug("1209:00c3:PROMETHEUS")
        #expect(watch.waitForOutput { $0.contains("\"serial\":\"PROMETHEUS\"") })
        try SimulatorControl.ctl("unplug", added.id)
        #expect(watch.waitForOutput { $0.contains("\"reason\":\"unplugged\"") })

        /// The query's vector result: each series' `kind` (or `reason`) label and value.
        func query(_ promql: String, label: String) -> [String: Double] {
            let escaped = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? promql
            guard let response = HTTPFetch.get(port: promPort, "/api/v1/query?query=\(escaped)"), response.status == 200,
                let object = try? JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any],
                let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
            else { return [:] }
            var values: [String: Double] = [:]
            for series in result {
                guard let metric = series["metric"] as? [String: String], let value = series["value"] as? [Any],
                    value.count == 2, let text = value[1] as? String
                else { continue }
                values[metric[label] ?? ""] = Double(text)
            }
            return values
        }
        var hotplug: [String: Double] = [:]
        let scraped = pollUntil(timeout: .seconds(45)) {
            hotplug = query("accessory_hotplug_events_total", label: "kind")
            return (hotplug["arrived"] ?? 0) >= 1 && (hotplug["left"] ?? 0) >= 1
        }
        #expect(scraped, "Prometheus query gave \(hotplug); its log: \(prometheus.stderr.suffix(2000))")
        let disconnects = query("accessory_disconnects_total", label: "reason")
        #expect((disconnects["unplugged"] ?? 0) >= 1, "\(disconnects)")
        #expect(Set(disconnects.keys).isSuperset(of: ["unplugged", "ghost-evicted", "recovered", "shutdown"]))
        let up = query("up", label: "job")
        #expect(up["accessoryctl"] == 1, "\(up)")
    }

    @Test("--metrics that is not a HOST:PORT is a usage error (64) that says why")
    func badAddress() throws {
        for bad in ["9464", "localhost", "127.0.0.1:99999", "[::1:80"] {
            let result = try CLI.ctl("watch", "--metrics", bad)
            #expect(result.status == 64, "\(bad): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("--metrics") && result.stderr.contains("HOST:PORT"), "\(result.stderr)")
        }
    }

    @Test("--metrics on a port in use ends watch with status 1 and says the port is in use")
    func portInUse() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (first, port) = try Self.startWatch(in: dir)
        defer { _ = first.stop(with: SIGTERM) }
        let second = try Background(CLI.accessoryctl, ["watch", "--metrics", "127.0.0.1:\(port)"], in: dir)
        #expect(second.waitForExit(timeout: 15) == 1)
        #expect(second.stderr.contains("cannot serve metrics on 127.0.0.1:\(port): the port is in use"), "\(second.stderr)")
    }
}
