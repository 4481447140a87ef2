import AccessoryCore
import AccessoryTraces
import Foundation
import Synchronization
import AccessoryTestSupport
import Testing
@testable import AccessoryKit

/// Hotplug storms of at least 10,000 uevents under the simulator (a tenth of that in the quick
/// run, `TestScale`), with sessions open: plain
/// storms beside a busy session, lossy storms (lost removes, lost adds, overflows that drop
/// whole runs of events, silent unplugs), and re-enumeration under open sessions. After each
/// storm the registry must equal the simulator's `list` within one reconcile interval, and
/// the full notification log must keep every invariant of DESIGN.md.
extension HardwareTests {
    @Suite("Storms under load", .simulatorLock)
    struct StormsUnderLoad {
        typealias Sim = SimulatorControl
        static let loopback = "org.example.loopback"
        /// The manager's periodic reconcile in these tests.
        static let interval = Duration.seconds(1)
        /// What a loaded 2-core machine may add on top of the interval: the storm's backlog
        /// of libusb events is still being drained when the simulator's command returns.
        static let allowance = Duration.seconds(1)

        /// One device as the registry and the simulator's `list` both describe it.
        struct Listed: Hashable, CustomStringConvertible {
            var bus: Int, address: Int, port: String, vendorProduct: String, serial: String?
            var description: String { "\(bus):\(address)@\(port) \(vendorProduct) \(serial ?? "-")" }
        }

        static func registry(_ manager: AccessoryManager) async -> Set<Listed> {
            Set(await manager.connectedAccessories.map { a in
                let d = a.descriptor
                return Listed(
                    bus: d.bus, address: d.address ?? -1, port: d.port,
                    vendorProduct: String(format: "%04x:%04x", d.vendor ?? 0, d.product ?? 0), serial: d.serial)
            })
        }

        static func simulator() throws -> Set<Listed> {
            Set(try Sim.list().map {
                Listed(bus: $0.device.bus, address: $0.device.address, port: $0.device.port, vendorProduct: $0.vendorProduct, serial: $0.serial)
            })
        }

        /// Waits until the registry equals the simulator's list, and returns how long that
        /// took from `start`; fails with both lists when it does not happen in `limit`.
        static func settles(
            _ manager: AccessoryManager, since start: ContinuousClock.Instant, within limit: Duration,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> Duration {
            let truth = try simulator()
            let matched = await waitUntil(timeout: limit) { await registry(manager) == truth }
            let elapsed = ContinuousClock.now - start
            if !matched {
                let seen = await registry(manager)
                Issue.record(
                    "registry ≠ simulator after \(elapsed): only in registry \(seen.subtracting(truth)), only in simulator \(truth.subtracting(seen))",
                    sourceLocation: sourceLocation)
            }
            return elapsed
        }

        /// Runs a blocking call (a long `ctl storm`) on a thread of its own, so that it holds
        /// none of the cooperative pool's two threads while the manager drains the storm.
        static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try body() }) }.start()
            }
        }

        /// A lossy storm's reply: the final instance and the simulator's counts.
        struct LossyStorm { var device: Sim.Device, sent: Int, lost: Int, overflows: Int }

        static func lossyStorm(_ device: Sim.Device, cycles: Int, seed: UInt64) async throws -> LossyStorm {
            let reply = try await offPool { try Sim.ctl("storm", device.id, String(cycles), "--lossy", String(seed)) }
            var counts: [String: Int] = [:]
            for word in reply {
                let kv = word.split(separator: "=")
                if kv.count == 2, let v = Int(kv[1]) { counts[String(kv[0])] = v }
            }
            return LossyStorm(
                device: try Sim.device(fromReply: reply), sent: counts["sent"] ?? -1, lost: counts["lost"] ?? -1,
                overflows: counts["overflows"] ?? -1)
        }

        /// Echoes seeded payloads until `stop` is set or the session fails.
        /// - Returns: the rounds and bytes echoed, and the error that ended the loop, if any.
        static func echoLoop(_ session: AccessorySession, seed: UInt64, stop: StopFlag) async -> (rounds: Int, bytes: Int, error: AccessoryError?) {
            var rng = SplitMix64(seed: seed)
            var rounds = 0, bytes = 0
            while !stop.isSet {
                let payload = SessionFixtures.randomBytes(1 + Int(rng.next() % 4096), seed: rng.next())
                do {
                    let back = try await session.echo(payload)
                    if back != payload {
                        return (rounds, bytes, AccessoryError(.io, "echo \(rounds) came back different (\(back.count) of \(payload.count) bytes)", operation: "echo"))
                    }
                } catch {
                    return (rounds, bytes, error)
                }
                rounds += 1
                bytes += payload.count
            }
            return (rounds, bytes, nil)
        }

        /// Checks DESIGN.md's invariants on the full log (taken after shutdown), plus: nothing
        /// lost or left dangling. Every ID is disconnected in the end, and the ones the
        /// shutdown disconnected are exactly the registry's just before it.
        static func checkLog(_ events: [AccessoryEvent], registryAtEnd: [Accessory], sourceLocation: SourceLocation = #_sourceLocation) {
            checkInvariants(events, sourceLocation: sourceLocation)
            var open: Set<ConnectionID> = []
            var atShutdown: Set<ConnectionID> = []
            for event in events {
                switch event {
                case .connected(let a): open.insert(a.connectionID)
                case .disconnected(let a, let reason):
                    open.remove(a.connectionID)
                    if reason == .shutdown { atShutdown.insert(a.connectionID) }
                }
            }
            #expect(open.isEmpty, "connected and never disconnected: \(open)", sourceLocation: sourceLocation)
            #expect(atShutdown == Set(registryAtEnd.map(\.connectionID)), sourceLocation: sourceLocation)
        }

        /// Ends a storm test: a refresh must change nothing, then the manager shuts down and
        /// the full log is checked (``checkLog(_:registryAtEnd:sourceLocation:)``).
        /// - Returns: the full log.
        static func finish(_ manager: AccessoryManager, _ log: EventLog, sourceLocation: SourceLocation = #_sourceLocation) async -> [AccessoryEvent] {
            let refreshed = await manager.refresh().events
            #expect(refreshed.isEmpty, "a refresh after the storm settled changed \(refreshed)", sourceLocation: sourceLocation)
            let atEnd = await manager.connectedAccessories
            await manager.shutdown()
            await log.finished()
            let events = await log.events
            checkLog(events, registryAtEnd: atEnd, sourceLocation: sourceLocation)
            return events
        }

        static func connected(_ log: EventLog, at device: Sim.Device) async throws -> Accessory {
            try #require(await log.wait { $0.contains { if case .connected(let a) = $0 { HardwareTests.isAt(device)(a) } else { false } } })
            return try #require(await log.connected.last(where: HardwareTests.isAt(device)))
        }

        // MARK: Storms

        /// 10,000 uevents (1,000 in the quick run) on one port beside a busy session.
        @Test func tenThousandEventsWhileABystanderSessionEchoes() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let stormy = try plugged.plug("1209:00b1:STORMY")
            let bystander = try plugged.plug("1209:00b2:BYSTANDER")
            let (manager, log) = try await HardwareTests.manager(interval: Self.interval)
            let original = try await Self.connected(log, at: stormy)
            let session = try await manager.openSession(to: try await Self.connected(log, at: bystander), protocol: Self.loopback, name: "bystander")
            let stop = StopFlag()
            let echoes = Task { await Self.echoLoop(session, seed: 1, stop: stop) }

            // 5,000 unplug/replug cycles: 10,000 uevents (a tenth in the quick run).
            let cycles = TestScale.count(5000)
            let final = try await Self.offPool { try Sim.storm(stormy.id, cycles: cycles) }
            plugged.replace("STORMY", with: final)
            let settle = try await Self.settles(manager, since: .now, within: Self.interval + Self.allowance)
            stop.set()
            let (rounds, bytes, error) = await echoes.value
            #expect(error == nil, "the bystander's session failed during the storm: \(String(describing: error))")
            #expect(rounds > 0)
            #expect(!session.isClosed)
            await session.close()
            let events = await Self.finish(manager, log)
            #expect(events.contains { if case .disconnected(let a, _) = $0 { a.connectionID == original.connectionID } else { false } })
            let onPort = events.filter { if case .connected(let a) = $0 { a.descriptor.port == final.port } else { false } }.count
            print("storm-metrics plain: \(2 * cycles) uevents, \(onPort) connects on the storm's port, settled \(settle) after the storm, bystander echoed \(rounds) rounds / \(bytes) bytes")
        }

        @Test func lossyStormWithSilentUnplugsAndOverflows() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let lossy = try plugged.plug("1209:00b3:LOSSY")
            let doomed = try plugged.plug("1209:00b4:DOOMED")
            let (manager, log) = try await HardwareTests.manager(interval: Self.interval)
            _ = try await Self.connected(log, at: lossy)
            let ghost = try await Self.connected(log, at: doomed)

            // Before the storm: one accessory leaves and one arrives, neither with a uevent.
            // The storm starts once the periodic reconcile has had its look and the 250 ms
            // wait for a LEFT event has passed, that is once DOOMED is evicted and SNEAKY
            // admitted: within that wait, libusb would report the storm's removals at
            // DOOMED's reused address as DOOMED's own LEFT (it keys devices by bus and
            // address), which no host can tell from a late LEFT.
            try plugged.unplug("DOOMED", silent: true)
            let sneaky = try plugged.plug("1209:00b5:SNEAKY", silent: true)
            try #require(await log.wait { events in
                events.contains { if case .disconnected(let a, _) = $0 { a.connectionID == ghost.connectionID } else { false } }
                    && events.contains { if case .connected(let a) = $0 { HardwareTests.isAt(sneaky)(a) } else { false } }
            })
            // 8,000 cycles (800 in the quick run) with a seeded mix of lost removes, lost adds,
            // lost pairs and overflows (runs of 8–64 cycles with every uevent dropped).
            let cycles = TestScale.count(8000)
            let storm = try await Self.lossyStorm(lossy, cycles: cycles, seed: 20261122)
            plugged.replace("LOSSY", with: storm.device)
            #expect(storm.sent >= cycles * 5 / 4, "only \(storm.sent) uevents sent")
            #expect(storm.overflows > 0 && storm.lost > 0)
            let settle = try await Self.settles(manager, since: .now, within: Self.interval + Self.allowance)
            let events = await Self.finish(manager, log)
            let gone = events.compactMap { if case .disconnected(let a, let r) = $0, a.connectionID == ghost.connectionID { r } else { nil } }
            #expect(gone.map(\.code) == ["ghost-evicted"], "\(gone)")
            #expect(events.contains { if case .connected(let a) = $0 { HardwareTests.isAt(sneaky)(a) } else { false } })
            let reasons = Dictionary(grouping: events.compactMap { if case .disconnected(_, let r) = $0 { r.code } else { nil } }, by: { $0 }).mapValues(\.count)
            print("storm-metrics lossy: \(storm.sent) uevents sent, \(storm.lost) lost, \(storm.overflows) overflows; disconnects by reason \(reasons.sorted { $0.key < $1.key }); settled \(settle) after the storm")
        }

        @Test func reEnumerationWhileSessionsAreOpen() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let devices = try ["REENUM-LOUD", "REENUM-SILENT", "REENUM-STORM"].enumerated().map { i, serial in
                try plugged.plug("1209:00b\(6 + i):\(serial)")
            }
            let (manager, log) = try await HardwareTests.manager(interval: Self.interval)
            var accessories: [Accessory] = []
            var sessions: [AccessorySession] = []
            for device in devices {
                let accessory = try await Self.connected(log, at: device)
                accessories.append(accessory)
                sessions.append(try await manager.openSession(to: accessory, protocol: Self.loopback, name: accessory.descriptor.serial))
            }
            let stop = StopFlag()
            let loops = sessions.enumerated().map { i, session in Task { await Self.echoLoop(session, seed: UInt64(10 + i), stop: stop) } }
            // The three sessions are busy: each has echoed something.
            try #require(await waitUntil { sessions.allSatisfy { $0.pipe.statistics.inCompleted > 0 && $0.pipe.statistics.outCompleted > 0 } })

            // Under the three busy sessions: a re-enumeration the monitor sees, one it misses
            // entirely, and a lossy storm of 5,000 cycles (500 in the quick run).
            _ = try plugged.replug("REENUM-LOUD")
            _ = try plugged.replug("REENUM-SILENT", silent: true)
            let storm = try await Self.lossyStorm(try #require(plugged.devices["REENUM-STORM"]), cycles: TestScale.count(5000), seed: 7)
            plugged.replace("REENUM-STORM", with: storm.device)
            let settle = try await Self.settles(manager, since: .now, within: Self.interval + Self.allowance)

            // Every session ends with the manager's reason for its accessory, and none hangs.
            for (i, loop) in loops.enumerated() {
                let ended = Task {
                    // A watchdog, not a wait for an event: a loop that the storm did not end
                    // by then is stopped, and the check below reports it.
                    try await Task.sleep(for: Self.interval + Self.allowance + .seconds(10))
                    stop.set()
                }
                let (rounds, _, error) = await loop.value
                ended.cancel()
                let id = accessories[i].connectionID
                guard let error, let reason = error.code.disconnectReason else {
                    Issue.record("session on \(accessories[i].descriptor.serial ?? "?") ended with \(String(describing: error)) after \(rounds) rounds")
                    continue
                }
                let logged = await log.disconnected.first { $0.0.connectionID == id }?.1
                #expect(logged == reason, "session saw \(reason), the log says \(String(describing: logged))")
                await sessions[i].close()
            }

            // The accessories as they are now open and echo.
            for serial in ["REENUM-LOUD", "REENUM-SILENT", "REENUM-STORM"] {
                let now = try await Self.connected(log, at: try #require(plugged.devices[serial]))
                #expect(!accessories.contains { $0.connectionID == now.connectionID })
                let payload = SessionFixtures.randomBytes(4096, seed: 99)
                let echoed = try await manager.withSession(to: now, protocol: Self.loopback) { session throws(AccessoryError) in
                    try await session.echo(payload)
                }
                #expect(echoed == payload)
            }

            let events = await Self.finish(manager, log)
            let reasons = accessories.map { a in events.compactMap { if case .disconnected(let b, let r) = $0, b.connectionID == a.connectionID { r.description } else { nil } } }
            print("storm-metrics re-enumeration: \(storm.sent) uevents sent, \(storm.lost) lost; sessions ended with \(reasons); registry settled \(settle) after the storm")
        }
    }
}

/// A flag one task sets and others poll.
final class StopFlag: Sendable {
    private let flag = Synchronization.Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
