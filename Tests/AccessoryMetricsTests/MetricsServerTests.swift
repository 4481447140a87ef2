import AccessoryCore
import AccessoryKit
import AccessoryLocking
import AccessoryTesting
import Dispatch
import Glibc
import Testing
@testable import AccessoryMetrics

@Suite("MetricsServer: /metrics over HTTP on a POSIX socket")
struct MetricsServerTests {
    @Test("HOST:PORT parses; what is not one is refused with its reason")
    func addresses() throws {
        #expect(try MetricsAddress(parsing: "127.0.0.1:9464") == MetricsAddress(host: "127.0.0.1", port: 9464))
        #expect(try MetricsAddress(parsing: "[::1]:0").host == "::1")
        #expect(try MetricsAddress(parsing: "[::1]:80").description == "[::1]:80")
        #expect(try MetricsAddress(parsing: "localhost:65535").port == 65535)
        for (bad, says) in [("9464", "no ':PORT'"), ("127.0.0.1", "no ':PORT'"), ("127.0.0.1:", "port"), ("127.0.0.1:65536", "port"),
                            ("127.0.0.1:-1", "port"), ("127.0.0.1:9x", "port"), (":9464", "host is missing"), ("::1:9464", "brackets"),
                            ("[::1:9464", "brackets"), ("[127.0.0.1]:80", "IPv6"), ("a b:80", "space")] {
            #expect(throws: MetricsAddressError.self, "\(bad)") { try MetricsAddress(parsing: bad) }
            do { _ = try MetricsAddress(parsing: bad) } catch { #expect(error.description.contains(says), "\(bad): \(error)") }
        }
    }

    @Test("request heads route: GET and HEAD /metrics, 404 elsewhere, 405 and 400")
    func routes() {
        func route(_ s: String) -> MetricsHTTP.Route { MetricsHTTP.route(Array(s.utf8)) }
        #expect(route("GET /metrics HTTP/1.1\r\n\r\n") == .metrics)
        #expect(route("GET /metrics?x=1 HTTP/1.0\r\n\r\n") == .metrics)
        #expect(route("HEAD /metrics HTTP/1.1\r\n\r\n") == .metricsHead)
        #expect(route("GET / HTTP/1.1\r\n\r\n") == .status(404, "Not Found"))
        #expect(route("GET /metricsx HTTP/1.1\r\n\r\n") == .status(404, "Not Found"))
        #expect(route("POST /metrics HTTP/1.1\r\n\r\n") == .status(405, "Method Not Allowed"))
        #expect(route("garbage\r\n\r\n") == .status(400, "Bad Request"))
        #expect(MetricsHTTP.headIsComplete(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
        #expect(MetricsHTTP.headIsComplete(Array("GET / HTTP/1.1\n\n".utf8)))
        #expect(!MetricsHTTP.headIsComplete(Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)))
    }

    @Test("GET /metrics is 200 with the exposition's content type; other paths 404")
    func serves() async throws {
        let metrics = AccessoryMetrics()
        let server = try MetricsServer(address: try MetricsAddress(parsing: "127.0.0.1:0")) { metrics.exposition() }
        defer { server.stop() }
        #expect(server.port != 0)
        let port = server.port
        let ok = try await offPool { try RawConnection.get(port: port, "/metrics") }
        #expect(ok.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(ok.prefix(200))")
        #expect(ok.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(ok.contains("Connection: close\r\n"))
        let body = ok.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect(ok.contains("Content-Length: \(body.utf8.count)\r\n"))
        #expect(Exposition(body).value("accessory_sessions_open") == 0)
        let head = try await offPool { try RawConnection.get(port: port, "/metrics", method: "HEAD") }
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"))
        #expect(try await offPool { try RawConnection.get(port: port, "/") }.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(try await offPool { try RawConnection.get(port: port, "/metrics", method: "DELETE") }.hasPrefix("HTTP/1.1 405 "))
    }

    @Test("a silent client and one that never reads do not hold up other scrapers")
    func slowClients() async throws {
        let metrics = AccessoryMetrics()
        let server = try MetricsServer(address: try MetricsAddress(parsing: "127.0.0.1:0")) { metrics.exposition() }
        defer { server.stop() }
        // Half a request head, then nothing: its thread waits (up to the timeout) alone.
        let silent = try RawConnections(count: 5, port: server.port) { $0.send("GET /metr") }
        // A request whose response is never read.
        let deaf = try RawConnections(count: 5, port: server.port) { $0.send("GET /metrics HTTP/1.1\r\n\r\n") }
        let clock = ContinuousClock()
        let start = clock.now
        // Concurrent scrapers, each answered in full.
        let answers = Locked<[String]>([])
        let port = server.port
        await offPool { DispatchGroupLike.run(8) { answers.withLock { $0.append((try? RawConnection.get(port: port, "/metrics")) ?? "") } } }
        #expect(answers.withLock { $0 }.allSatisfy { $0.hasPrefix("HTTP/1.1 200 OK") && $0.contains("accessory_sessions_open 0") })
        #expect(clock.now - start < .seconds(3), "scrapes waited for the slow clients")
        _ = (silent, deaf)
    }

    @Test("a port in use is refused and says so")
    func portInUse() throws {
        let first = try MetricsServer(address: try MetricsAddress(parsing: "127.0.0.1:0")) { [] }
        defer { first.stop() }
        do {
            _ = try MetricsServer(address: MetricsAddress(host: "127.0.0.1", port: first.port)) { [] }
            Issue.record("a second server bound the same port")
        } catch {
            #expect(error.description.contains("the port is in use"), "\(error)")
            #expect(!error.isUsage)
        }
        do {
            _ = try MetricsServer(address: MetricsAddress(host: "no-such-host.invalid", port: 0)) { [] }
            Issue.record("an unresolvable host was bound")
        } catch {
            #expect(error.isUsage, "\(error)")
        }
    }

    @Test("a manager on simulated USB: connects, unplugs, hotplug events and sessions show in a scrape")
    func managerOnSimulatedUSB() async throws {
        let usb = SimulatedUSB()
        let first = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SECRET-SERIAL-1"))
        try await withAccessoryManager(usb: usb) { manager in
            let metrics = AccessoryMetrics()
            let observer = Task { await metrics.observe(manager) }
            let second = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0002, serial: "SECRET-SERIAL-2"))
            let accessory = try #require(await manager.connectedAccessories.first { $0.descriptor.product == 0x0002 })
            let session = try await manager.openSession(to: accessory, protocol: "org.example.loopback")
            await usb.unplug(first)
            var e = Exposition([])
            for _ in 0..<2000 {
                await metrics.refresh(from: manager)
                e = Exposition(metrics.exposition())
                if e.value("accessory_disconnects_total", ["reason": "unplugged"]) == 1 { break }
                await Task.yield()
            }
            #expect(e.value("accessory_connected", ["vendor": "1209", "product": "0001"]) == 0)
            #expect(e.value("accessory_connected", ["vendor": "1209", "product": "0002"]) == 1)
            #expect(e.value("accessory_disconnects_total", ["reason": "unplugged"]) == 1)
            #expect(e.value("accessory_hotplug_events_total", ["kind": "arrived"]) == 1)  // the second; the first was in the snapshot
            #expect(e.value("accessory_hotplug_events_total", ["kind": "left"]) == 1)
            #expect(e.value("accessory_sessions_open") == 1)
            #expect(!String(decoding: metrics.exposition(), as: UTF8.self).contains("SECRET"))
            await session.close()
            await usb.unplug(second)
            await metrics.refresh(from: manager)
            #expect(Exposition(metrics.exposition()).value("accessory_sessions_open") == 0)
            await manager.shutdown()
            await observer.value
            #expect(Exposition(metrics.exposition()).value("accessory_connected", ["vendor": "1209", "product": "0002"]) == 0)
        }
    }
}

/// Runs blocking client work on a thread of its own, so that the server's scrape (a task)
/// finds the cooperative pool free, as it does in a program.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DetachedThread.start { continuation.resume(with: Result { try work() }) }
    }
}

func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DetachedThread.start { continuation.resume(returning: work()) }
    }
}

/// Connections opened and kept until this value goes.
final class RawConnections {
    private var fds: [Int32] = []

    init(count: Int, port: UInt16, _ first: (borrowing RawConnection) -> Void) throws {
        for _ in 0..<count {
            let c = try RawConnection(port: port)
            first(c)
            fds.append(dup(c.fd))
        }
    }

    deinit { fds.forEach { close($0) } }
}

/// Runs `work` on `count` threads at once and waits for them all.
enum DispatchGroupLike {
    static func run(_ count: Int, _ work: @escaping @Sendable () -> Void) {
        let done = DispatchGroup()
        for _ in 0..<count {
            done.enter()
            DetachedThread.start { work(); done.leave() }
        }
        done.wait()
    }
}
