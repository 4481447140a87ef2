import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// Automatic recovery (`Configuration.recovery`) through real libusb and sysfs on
    /// accessory-sim: timeouts in a session on a wedged device, a device that vanished, and a
    /// budget that stops a dead device from looping.
    @Suite("Automatic recovery")
    struct AutoRecovery {
        typealias PortPower = HardwareTests.PortPower
        static let loopback = "org.example.loopback"

        /// Every report `manager` sends, as they come.
        actor Reports {
            private(set) var all: [RecoveryReport] = []

            init(_ manager: AccessoryManager) {
                let stream = manager.recoveries()
                Task { await self.follow(stream) }
            }

            private func follow(_ stream: AsyncStream<RecoveryReport>) async {
                for await report in stream { all.append(report) }
            }

            /// The first `count` reports, once they are there (at most `timeout`).
            func wait(for count: Int, timeout: Duration = .seconds(15)) async -> [RecoveryReport] {
                _ = await waitUntil(timeout: timeout) { all.count >= count }
                return all
            }
        }

        /// `count` one-transfer reads on 0x81 that time out.
        static func timeOut(_ session: AccessorySession, _ count: Int) async {
            for i in 0..<count {
                do {
                    _ = try await session.transferIn(0x81, length: 64, timeout: .milliseconds(100))
                    Issue.record("read \(i) on a wedged device worked")
                } catch {
                    #expect(error.code == .timeout, "read \(i): \(error)")
                }
            }
        }

        @Test func timeoutsInASessionRecoverTheAccessoryAndEndTheSessionAsRecovered() async throws {
            let (manager, log) = try await HardwareTests.manager(configure: {
                $0.recovery = RecoveryPolicy(upTo: .reauthorize, afterTimeouts: 3)
            })
            let reports = Reports(manager)
            let device = try Sim.plug("1209:00f5:AUTO1:\(Self.loopback)", port: "1-39")
            defer { if let now = try? Sim.device(serial: "AUTO1") { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
            let before = try #require(await PortPower.wait(for: "AUTO1", in: log, after: 0))
            let session = try await manager.openSession(to: before, protocol: Self.loopback)
            // It answers first: a call that works, then two timeouts, then one that works again
            // does not make a streak.
            try await session.transferOut(0x01, [1, 2, 3], timeout: .seconds(2))
            #expect(try await session.transferIn(0x81, length: 64, timeout: .seconds(2)) == [1, 2, 3])
            #expect(try Sim.ctl("wedge", device.id, "--cured-by", "reset") == ["ok"])
            await Self.timeOut(session, 2)
            #expect(await reports.wait(for: 1, timeout: .milliseconds(500)).isEmpty, "two timeouts are not three")
            // A long call in flight when the third timeout starts the recovery ends with it.
            let inFlight = Task { () async -> AccessoryError? in
                do throws(AccessoryError) {
                    _ = try await session.transferIn(0x81, length: 64, timeout: .seconds(10))
                    return nil
                } catch {
                    return error
                }
            }
            try #require(await waitUntil(timeout: .seconds(5)) { session.callsInFlight > 0 }, "the long call is in flight")
            await Self.timeOut(session, 1)
            let report = try #require(await reports.wait(for: 1).first)
            #expect(report.trigger == "3 timeouts on 0x81", "\(report.trigger)")
            #expect(report.port == "1-39" && report.skipped == nil)
            #expect(report.steps.map(\.step) == [.reset] && report.steps.last?.outcome == "recovered", "\(report.steps)")
            let back = try #require(report.accessory)
            #expect(back.connectionID == before.connectionID || back.previousConnectionID == before.connectionID, "\(back)")
            #expect(await PortPower.answers(manager, back))
            // The session ended with the reason that names the step, and was closed.
            let ended = try await withDeadline("the call in flight", timeout: .seconds(5)) { await inFlight.value }
            #expect(ended?.code == .accessoryDisconnected(.recovered(.reset)), "\(String(describing: ended))")
            #expect(session.isClosed)
            // A new session on the accessory as it is now works.
            let again = try await manager.openSession(to: back, protocol: Self.loopback)
            try await again.transferOut(0x01, [4], timeout: .seconds(2))
            #expect(try await again.transferIn(0x81, length: 64, timeout: .seconds(2)) == [4])
            await again.close()
            await manager.shutdown()
        }

        @Test func anAccessoryThatVanishedGetsItsPortPowerCycledAndComesBackLinked() async throws {
            let (manager, log) = try await HardwareTests.manager(configure: {
                $0.recovery = RecoveryPolicy(afterTimeouts: nil, vanishedFor: .milliseconds(500))
            })
            let reports = Reports(manager)
            let hubs = PortPower.Hubs()
            try hubs.plug("1-40", ports: 2)
            let device = try Sim.plug("1209:00f6:AUTO2", port: "1-40.2")
            defer { if let now = try? Sim.device(serial: "AUTO2") { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
            let before = try #require(await PortPower.wait(for: "AUTO2", in: log, after: 0))
            let logBefore = try PortPower.powerLog().count
            #expect(try Sim.ctl("vanish", device.id, "--back-on", "power-cycle") == ["ok"])
            #expect(await PortPower.waitGone(before, in: log) == .unplugged)
            let report = try #require(await reports.wait(for: 1).first)
            #expect(report.trigger == "vanished for 0.5 s", "\(report.trigger)")
            #expect(report.steps.map(\.step) == [.powerCycle] && report.steps.last?.outcome == "recovered", "\(report.steps)")
            let back = try #require(report.accessory)
            #expect(back.descriptor.serial == "AUTO2" && back.descriptor.port == "1-40.2")
            #expect(back.previousConnectionID == before.connectionID, "the accessory that came back continues the one that vanished")
            #expect(try Array(PortPower.powerLog().dropFirst(logBefore)) == ["1-40.2 off", "1-40.2 on"])
            await manager.shutdown()
        }

        @Test func aDeviceNothingCuresIsRecoveredOnlyAsOftenAsTheBudgetAllows() async throws {
            let (manager, log) = try await HardwareTests.manager(configure: {
                $0.recovery = RecoveryPolicy(upTo: .reset, afterTimeouts: 2, budget: 1, per: .seconds(3600))
            })
            let reports = Reports(manager)
            let device = try Sim.plug("1209:00f7:AUTO3:\(Self.loopback)", port: "1-41")
            defer { if let now = try? Sim.device(serial: "AUTO3") { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
            let before = try #require(await PortPower.wait(for: "AUTO3", in: log, after: 0))
            #expect(try Sim.ctl("wedge", device.id, "--cured-by", "never") == ["ok"])
            let session = try await manager.openSession(to: before, protocol: Self.loopback)
            await Self.timeOut(session, 2)
            let first = try #require(await reports.wait(for: 1).first)
            #expect(first.trigger == "2 timeouts on 0x81" && !first.recovered && first.skipped == nil, "\(first)")
            #expect(first.steps.map(\.step) == [.reset], "\(first.steps)")
            await session.close()
            // Still wedged: two more timeouts in a new session are over the budget.
            let now = try #require(await manager.connectedAccessories.first { $0.descriptor.serial == "AUTO3" })
            let second = try await manager.openSession(to: now, protocol: Self.loopback)
            await Self.timeOut(second, 2)
            let all = await reports.wait(for: 2)
            let skip = try #require(all.count == 2 ? all[1] : nil)
            #expect(skip.steps.isEmpty && !skip.recovered, "\(skip)")
            #expect(skip.skipped?.contains("the budget of 1 recovery per 3600 s on port 1-41 is spent") == true, "\(skip.skipped ?? "nil")")
            // The session the skip left alone goes on (nothing ended it).
            #expect(second.isClosed == false)
            await second.close()
            // And nothing more happens by itself. Time on purpose: a report that must not come
            // cannot be awaited; 500 ms is five times the timeouts that would trigger one.
            try await Task.sleep(for: .milliseconds(500))
            #expect(await reports.wait(for: 3, timeout: .zero).count == 2)
            await manager.shutdown()
        }
    }
}
