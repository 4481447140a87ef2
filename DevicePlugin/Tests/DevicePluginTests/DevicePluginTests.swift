import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KubeletDevicePluginAPI
import Testing

/// The plugin as a kubelet sees it, under accessory-sim with two loopback accessories
/// (1209:0001 SN1 and 1209:0002 SN2, as scripts/test starts it).
@Suite("accessory-device-plugin and a kubelet", .serialized, .enabled(if: Simulator.isActive, "needs accessory-sim (scripts/test runs it)"))
struct DevicePluginTests {
    static let endpoint = "accessory-example.org_loopback.sock"
    static let sn1 = "1209-0001-SN1"
    static let sn2 = "1209-0002-SN2"

    /// A kubelet directory, a fake kubelet serving in it, and the plugin registered with it.
    struct Running {
        let directory: String
        let kubelet: FakeKubelet
        let plugin: PluginProcess
        let lists = DeviceLists()
        var watch: Task<Void, any Error>?
    }

    private func start(watching: Bool = true, refusals: Int = 0, arguments: [String] = []) async throws -> Running {
        // In /tmp, not the simulator's long TMPDIR: a unix socket's path has at most 107 bytes.
        let directory = "/tmp/kubelet-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let kubelet = FakeKubelet(directory: directory)
        kubelet.refuseNext(refusals)
        try await kubelet.start()
        var running = Running(directory: directory, kubelet: kubelet, plugin: try PluginProcess(kubeletDir: directory, arguments: arguments))
        do {
            _ = try await kubelet.waitForRegistrations(1, timeout: .seconds(10))
        } catch {
            Issue.record("the plugin did not register; its log:\n\(running.plugin.log)")
            await finish(running)
            throw error
        }
        if watching { running.watch = listAndWatch(running) }
        return running
    }

    /// Follows ListAndWatch into `running.lists`, reconnecting when the stream ends (as a
    /// kubelet does after the plugin registers again).
    private func listAndWatch(_ running: Running) -> Task<Void, any Error> {
        Task {
            while !Task.isCancelled {
                try? await running.kubelet.withPlugin(endpoint: Self.endpoint) { plugin in
                    try await plugin.listAndWatch(V1beta1_Empty()) { response in
                        for try await list in response.messages { running.lists.append(list) }
                    }
                }
                // A pause before the kubelet calls again, as a real kubelet retries.
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Runs `body` with a started plugin, then stops it (SIGTERM) and the kubelet.
    private func withPlugin(
        watching: Bool = true, refusals: Int = 0, arguments: [String] = [], _ body: (Running) async throws -> Void
    ) async throws {
        let running = try await start(watching: watching, refusals: refusals, arguments: arguments)
        do {
            try await body(running)
        } catch {
            await finish(running)
            throw error
        }
        await finish(running)
    }

    private func finish(_ running: Running) async {
        running.watch?.cancel()
        _ = running.plugin.stop(with: SIGTERM)
        await running.kubelet.stop()
        try? FileManager.default.removeItem(atPath: running.directory)
    }

    private func allocate(_ running: Running, _ ids: [String]) async throws -> V1beta1_AllocateResponse {
        try await running.kubelet.withPlugin(endpoint: Self.endpoint) { plugin in
            try await plugin.allocate(.with { $0.containerRequests = [.with { $0.devicesIds = ids }] })
        }
    }

    @Test("Registers API v1beta1 with its socket's file name and the resource, then lists both accessories healthy by physical identity")
    func registersAndLists() async throws {
        try await withPlugin { running in
            let registration = try #require(running.kubelet.registrationsSoFar.first)
            #expect(registration.version == "v1beta1")
            #expect(registration.endpoint == Self.endpoint)
            #expect(!registration.endpoint.contains("/"))
            #expect(registration.resourceName == "example.org/loopback")
            #expect(FileManager.default.fileExists(atPath: running.directory + "/" + registration.endpoint))
            let list = try await running.lists.wait(timeout: .seconds(5), "a first list") { !$0.isEmpty }
            #expect(list == [Self.sn1: "Healthy", Self.sn2: "Healthy"])
            let options = try await running.kubelet.withPlugin(endpoint: Self.endpoint) { try await $0.getDevicePluginOptions(V1beta1_Empty()) }
            #expect(!options.preStartRequired)
        }
    }

    @Test("--metrics serves /metrics: the accessories connected, and an unplug counted by its reason")
    func servesMetrics() async throws {
        try await withPlugin(arguments: ["--metrics", "127.0.0.1:0"]) { running in
            var port: UInt16?
            for _ in 0..<100 where port == nil {
                if let range = running.plugin.log.range(of: "serving metrics at http://127.0.0.1:") {
                    port = UInt16(running.plugin.log[range.upperBound...].prefix { $0.isNumber })
                }
                // A bounded poll (100 × 50 ms) for the log line.
                try await Task.sleep(for: .milliseconds(50))
            }
            let metricsPort = try #require(port, "no metrics port in the log: \(running.plugin.log)")
            let first = MetricsScrape.get(port: metricsPort)
            #expect(first.contains("# TYPE accessory_disconnects_total counter"), "\(first)")
            #expect(first.contains(#"accessory_connected{vendor="1209",product="0001"} 1"#), "\(first)")
            let added = try Simulator.ctl("plug", "1209:00d1:PLUGINMETRICS:org.example.loopback")
            try #require(added.count >= 3, "\(added)")
            // The plug is seen before the unplug: the gauge counts it.
            var seen = false
            for _ in 0..<100 where !seen {
                seen = MetricsScrape.get(port: metricsPort).contains(#"accessory_connected{vendor="1209",product="00d1"} 1"#)
                // A bounded poll (100 × 50 ms) for the scrape to show it.
                if !seen { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(seen, "the plug never showed in the scrape")
            try Simulator.ctl("unplug", "\(added[1]):\(added[2])")
            var scrape = ""
            for _ in 0..<100 {
                scrape = MetricsScrape.get(port: metricsPort)
                if scrape.contains(#"accessory_disconnects_total{reason="unplugged"} 1"#) { break }
                // A bounded poll (100 × 50 ms) for the scrape to show it.
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(scrape.contains(#"accessory_disconnects_total{reason="unplugged"} 1"#), "\(scrape)")
            #expect(scrape.contains(#"accessory_connected{vendor="1209",product="00d1"} 0"#), "\(scrape)")
            #expect(!scrape.contains("PLUGINMETRICS"))
        }
    }

    @Test("Unplugged: Unhealthy within 2 s under the same ID; back: Healthy within 2 s; Allocate follows")
    func unplugAndReturn() async throws {
        try await withPlugin { running in
            try await running.lists.wait(timeout: .seconds(5), "both healthy") { $0[Self.sn1] == "Healthy" && $0[Self.sn2] == "Healthy" }
            let before = try #require(try Simulator.device(serial: "SN1"))

            let unplugged = ContinuousClock.now
            try Simulator.ctl("unplug", "\(before.bus):\(before.address)")
            let gone = try await running.lists.wait(timeout: .seconds(2), "SN1 unhealthy") { $0[Self.sn1] == "Unhealthy" }
            #expect(gone[Self.sn2] == "Healthy")
            let unhealthyAfter = ContinuousClock.now - unplugged
            await #expect(throws: RPCError.self) {
                do { _ = try await allocate(running, [Self.sn1]) } catch let error as RPCError {
                    #expect(error.code == .failedPrecondition)
                    throw error
                }
            }

            let replugged = ContinuousClock.now
            try Simulator.ctl("plug", "1209:0001:SN1:org.example.loopback", "--port", before.port)
            try await running.lists.wait(timeout: .seconds(2), "SN1 healthy again") { $0[Self.sn1] == "Healthy" }
            let healthyAfter = ContinuousClock.now - replugged
            #expect(running.lists.latest.map { Set($0.keys) } == [Self.sn1, Self.sn2])
            let after = try #require(try Simulator.device(serial: "SN1"))
            let response = try await allocate(running, [Self.sn1])
            let node = String(format: "/dev/bus/usb/%03d/%03d", after.bus, after.address)
            #expect(response.containerResponses.first?.devices.map(\.hostPath) == [node])
            print("unhealthy \(unhealthyAfter) after the unplug, healthy \(healthyAfter) after the plug")
        }
    }

    @Test("A silent re-enumeration, found by the reconciler, gives Allocate the new node")
    func silentReenumeration() async throws {
        try await withPlugin { running in
            try await running.lists.wait(timeout: .seconds(5), "SN2 healthy") { $0[Self.sn2] == "Healthy" }
            let first = try await allocate(running, [Self.sn2]).containerResponses[0]
            let old = try #require(try Simulator.device(serial: "SN2"))
            #expect(first.devices.map(\.hostPath) == [String(format: "/dev/bus/usb/%03d/%03d", old.bus, old.address)])
            #expect(first.devices.first?.containerPath == first.devices.first?.hostPath)
            #expect(first.devices.first?.permissions == "rw")
            #expect(first.envs["ACCESSORY_SERIAL"] == "SN2")
            #expect(first.envs["ACCESSORY_PORT"] == old.port)
            #expect(first.envs["ACCESSORY_DEVICE"] == first.devices.first?.hostPath)
            let oldConnection = try #require(first.envs["ACCESSORY_CONNECTION_ID"].flatMap { UInt64($0) })

            try Simulator.ctl("replug", "\(old.bus):\(old.address)", "--silent")
            let new = try #require(try Simulator.device(serial: "SN2"))
            #expect(new.address != old.address)
            let newNode = String(format: "/dev/bus/usb/%03d/%03d", new.bus, new.address)
            var latest = first
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                latest = try await allocate(running, [Self.sn2]).containerResponses[0]
                if latest.devices.first?.hostPath == newNode { break }
                // A poll with a deadline (5 s, above).
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(latest.devices.map(\.hostPath) == [newNode])
            #expect(latest.envs["ACCESSORY_CONNECTION_ID"].flatMap { UInt64($0) }.map { $0 > oldConnection } == true)
            // The same physical accessory: still listed once, healthy, under the same ID.
            #expect(running.lists.latest?[Self.sn2] == "Healthy")
        }
    }

    @Test("Clones (one serial on two boards) keep their IDs when their address order swaps across a restart")
    func clonesAcrossRestart() async throws {
        for _ in 0..<2 { try Simulator.ctl("plug", "1209:0003:SN3:org.example.loopback") }
        defer {
            for d in (try? Simulator.devices(serial: "SN3")) ?? [] { _ = try? Simulator.ctl("unplug", "\(d.bus):\(d.address)") }
        }
        let clones = try Simulator.devices(serial: "SN3")
        try #require(clones.count == 2)
        let expected = Dictionary(uniqueKeysWithValues: clones.map { ("1209-0003-SN3-port-\($0.port)", $0.port) })

        /// Each SN3 ID listed, healthy, and the port Allocate gives it.
        func ports(_ running: Running) async throws -> [String: String] {
            let list = try await running.lists.wait(timeout: .seconds(5), "four devices") { $0.count >= 4 }
            var ports: [String: String] = [:]
            for (id, health) in list where id.hasPrefix("1209-0003-") {
                #expect(health == "Healthy", "\(id)")
                ports[id] = try await allocate(running, [id]).containerResponses.first?.envs["ACCESSORY_PORT"]
            }
            return ports
        }
        try await withPlugin { running in
            let got = try await ports(running)
            #expect(got == expected)
        }
        // The clone with the lower address re-enumerates at a higher one; the plugin starts again.
        let lower = try #require(clones.min { $0.address < $1.address })
        try Simulator.ctl("replug", "\(lower.bus):\(lower.address)")
        try await withPlugin { running in
            let got = try await ports(running)
            #expect(got == expected)
        }
    }

    @Test("An unknown ID is NOT_FOUND")
    func unknownID() async throws {
        try await withPlugin(watching: false) { running in
            do {
                _ = try await allocate(running, ["1209-0001-NOSUCH"])
                Issue.record("Allocate of an unknown ID succeeded")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
                #expect(error.message.contains("1209-0001-NOSUCH"))
            }
        }
    }

    @Test("A kubelet restart (its socket recreated, the plugin's removed) brings a new registration within 5 s, and lists again")
    func kubeletRestart() async throws {
        try await withPlugin { running in
            try await running.lists.wait(timeout: .seconds(5), "a first list") { !$0.isEmpty }
            let before = running.lists.all.count
            await running.kubelet.stop()
            // A kubelet that starts removes the plugins' sockets in its directory, then
            // makes its own: the plugin sees both at its next look.
            unlink(running.directory + "/" + Self.endpoint)
            let restarted = ContinuousClock.now
            try await running.kubelet.start()
            let registrations = try await running.kubelet.waitForRegistrations(2, timeout: .seconds(5))
            #expect(registrations.count == 2)
            // It served again before it registered: the kubelet's dial never failed.
            #expect(running.kubelet.dialFailures == 0, "\(running.plugin.log)")
            #expect(registrations.last?.endpoint == Self.endpoint)
            print("registered again \(ContinuousClock.now - restarted) after the kubelet restarted")
            #expect(FileManager.default.fileExists(atPath: running.directory + "/" + Self.endpoint))
            // The plugin served again on a new socket; ListAndWatch, reconnected, lists again.
            do {
                _ = try await Poll.until(timeout: .seconds(5), "a list after the restart") { running.lists.all.count > before ? true : nil }
            } catch {
                Issue.record("no list after the restart (\(running.lists.all.count) lists in all); the plugin's log:\n\(running.plugin.log)")
                throw error
            }
            #expect(running.lists.latest == [Self.sn1: "Healthy", Self.sn2: "Healthy"])
        }
    }

    @Test("A kubelet that comes back on a new socket, with the plugin's left in place, gets a new registration within 5 s")
    func kubeletSocketRecreated() async throws {
        try await withPlugin(watching: false) { running in
            await running.kubelet.stop()
            try await running.kubelet.start()
            let registrations = try await running.kubelet.waitForRegistrations(2, timeout: .seconds(5))
            #expect(registrations.map(\.version) == ["v1beta1", "v1beta1"])
            let options = try await running.kubelet.withPlugin(endpoint: Self.endpoint) { try await $0.getDevicePluginOptions(V1beta1_Empty()) }
            #expect(options.getPreferredAllocationAvailable)
        }
    }

    @Test("A chmod of its socket and of the kubelet's (a relabel changes the same change time) neither restarts it nor registers again")
    func chmodKeepsServing() async throws {
        try await withPlugin { running in
            try await running.lists.wait(timeout: .seconds(5), "a first list") { !$0.isEmpty }
            let socket = running.directory + "/" + Self.endpoint
            let lists = running.lists.all.count
            #expect(chmod(socket, 0o600) == 0)
            #expect(chmod(running.kubelet.socketPath, 0o600) == 0)
            // Time on purpose: nothing may happen, and an absence cannot be awaited. Eight of
            // its 250 ms looks: each would have seen a new socket before.
            try await Task.sleep(for: .seconds(2))
            #expect(running.kubelet.registrationsSoFar.count == 1, "\(running.plugin.log)")
            #expect(!running.plugin.log.contains("serving again"), "\(running.plugin.log)")
            // The server went on: ListAndWatch was not ended and reconnected.
            #expect(running.lists.all.count == lists)
            let options = try await running.kubelet.withPlugin(endpoint: Self.endpoint) { try await $0.getDevicePluginOptions(V1beta1_Empty()) }
            #expect(options.getPreferredAllocationAvailable)
            // A socket made again is still seen at once, on the same inode or not.
            await running.kubelet.stop()
            try await running.kubelet.start()
            _ = try await running.kubelet.waitForRegistrations(2, timeout: .seconds(5))
        }
    }

    @Test("Registers only once it knows its devices: the kubelet's first list already has both")
    func firstListComplete() async throws {
        try await withPlugin(watching: false) { running in
            let first = try await Poll.until(timeout: .seconds(5), "the kubelet's first list") { running.kubelet.firstLists.first }
            #expect(first == [Self.sn1: "Healthy", Self.sn2: "Healthy"])
        }
    }

    @Test("A second instance leaves the first one's socket alone, waits, and takes over when the first exits")
    func secondInstance() async throws {
        try await withPlugin(watching: false) { running in
            let socket = running.directory + "/" + Self.endpoint
            let first = try #require(UnixListener.identity(of: socket))
            let second = try PluginProcess(kubeletDir: running.directory)
            do {
                _ = try await Poll.until(timeout: .seconds(10), "the second instance to wait") {
                    second.log.contains("another instance serves") ? true : nil
                }
            } catch {
                Issue.record("the second instance:\n\(second.log)\nthe first:\n\(running.plugin.log)")
                _ = second.stop(with: SIGTERM)
                throw error
            }
            #expect(UnixListener.identity(of: socket) == first)
            #expect(!running.plugin.log.contains("was removed"), "\(running.plugin.log)")

            // The first exits (a rolling update): the second serves and registers.
            #expect(running.plugin.stop(with: SIGTERM) == 0)
            let registrations = try await running.kubelet.waitForRegistrations(2, timeout: .seconds(5))
            #expect(registrations.last?.endpoint == Self.endpoint)
            #expect(second.log.contains("serving the DevicePlugin service"), "\(second.log)")
            let options = try await running.kubelet.withPlugin(endpoint: Self.endpoint) { try await $0.getDevicePluginOptions(V1beta1_Empty()) }
            #expect(options.getPreferredAllocationAvailable)
            #expect(second.stop(with: SIGTERM) == 0, "\(second.log)")
            #expect(UnixListener.identity(of: socket) == nil)
        }
    }

    @Test("On its way out it leaves a socket that another program made at its path")
    func leavesAnotherSocket() async throws {
        try await withPlugin(watching: false) { running in
            let socket = running.directory + "/" + Self.endpoint
            unlink(socket)
            let other = try UnixListener(path: socket)
            let identity = UnixListener.identity(of: socket)
            do {
                _ = try await Poll.until(timeout: .seconds(5), "the plugin to see another socket there") {
                    running.plugin.log.contains("another instance serves") ? true : nil
                }
            } catch {
                Issue.record("the plugin's log:\n\(running.plugin.log)")
                throw error
            }
            #expect(running.plugin.stop(with: SIGTERM) == 0)
            #expect(UnixListener.identity(of: other.path) == identity)
        }
    }

    @Test("A refused registration is tried again, later each time, until the kubelet accepts it")
    func refusedRegistration() async throws {
        try await withPlugin(watching: false, refusals: 2) { running in
            #expect(running.kubelet.refusalsMade == 2)
            #expect(running.kubelet.registrationsSoFar.count == 1)
            #expect(running.plugin.log.contains("cannot register with the kubelet"))
        }
    }

    @Test("A socket path it cannot bind: exits 1 at once, naming the path")
    func cannotBind() async throws {
        let directory = "/tmp/kubelet-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory + "/" + Self.endpoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plugin = try PluginProcess(kubeletDir: directory)
        let deadline = Date().addingTimeInterval(10)
        // A poll with a deadline (10 s, above) for the plugin's exit.
        while plugin.process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!plugin.process.isRunning)
        #expect(plugin.process.terminationStatus == 1)
        #expect(plugin.log.contains("cannot listen on \(directory)/\(Self.endpoint)"), "\(plugin.log)")
    }

    @Test("SIGTERM: exits 0 and leaves no socket")
    func sigterm() async throws {
        let running = try await start()
        try await running.lists.wait(timeout: .seconds(5), "a first list") { !$0.isEmpty }
        let socket = running.directory + "/" + Self.endpoint
        #expect(FileManager.default.fileExists(atPath: socket))
        let status = running.plugin.stop(with: SIGTERM)
        #expect(status == 0, "\(running.plugin.log)")
        #expect(!FileManager.default.fileExists(atPath: socket))
        running.watch?.cancel()
        await running.kubelet.stop()
        try? FileManager.default.removeItem(atPath: running.directory)
    }
}

extension DevicePluginTests {
    /// Runs `body`, failing after `timeout`: a gRPC call that hangs fails the test instead
    /// of the suite.
    static func bounded<R: Sendable>(_ what: String, _ timeout: Duration, _ body: @escaping @Sendable () async throws -> R) async throws -> R {
        try await withThrowingTaskGroup(of: R?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                // The deadline itself: real time is what it measures.
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw Poll.Timeout(description: "\(what): not done within \(timeout)")
            }
            return value
        }
    }

    @Test("--recover --recover-vanished: a vanished accessory's device turns Unhealthy under its ID, the plugin power-cycles its port, and it is Healthy again under the same ID with its new node")
    func recoversAVanishedAccessory() async throws {
        let hub = try Simulator.ctl("plug-hub", "1-43", "2")
        try #require(hub.count >= 3, "\(hub)")
        defer { _ = try? Simulator.ctl("unplug", "\(hub[1]):\(hub[2])") }
        let added = try Simulator.ctl("plug", "1209:00d2:HEALME:org.example.loopback", "--port", "1-43.1")
        try #require(added.count >= 3, "\(added)")
        defer { if let now = try? Simulator.device(serial: "HEALME") { _ = try? Simulator.ctl("unplug", "\(now.bus):\(now.address)") } }
        let id = "1209-00d2-HEALME"
        try await withPlugin(arguments: ["--recover", "--recover-vanished", "1"]) { running in
            try await running.lists.wait(timeout: .seconds(5), "\(id) healthy") { $0[id] == "Healthy" }
            let before = try #require(try Simulator.device(serial: "HEALME"))
            try Simulator.ctl("vanish", "\(before.bus):\(before.address)", "--back-on", "power-cycle")
            try await running.lists.wait(timeout: .seconds(5), "\(id) unhealthy") { $0[id] == "Unhealthy" }
            let back = try await running.lists.wait(timeout: .seconds(15), "\(id) healthy again") { $0[id] == "Healthy" }
            #expect(back.keys.filter { $0.contains("HEALME") } == [id], "one device, under the same ID: \(back)")
            let now = try #require(try Simulator.device(serial: "HEALME"))
            #expect(now.address != before.address)
            let response = try await Self.bounded("Allocate", .seconds(10)) { try await self.allocate(running, [id]) }
            #expect(response.containerResponses.first?.devices.map(\.hostPath) == [String(format: "/dev/bus/usb/%03d/%03d", now.bus, now.address)])
            #expect(running.plugin.log.contains("recovery on port 1-43.1 (vanished for 1 s): power-cycle: recovered"), "\(running.plugin.log)")
        }
    }
}
