import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// The recovery ladder through real libusb and sysfs on accessory-sim, whose wedged
    /// devices answer again only after the step that cures them.
    @Suite("Recovery ladder")
    struct RecoveryLadder {
        typealias PortPower = HardwareTests.PortPower

        @Test func eachWedgeIsCuredByItsOwnStepAndTheReportSaysWhatEveryStepDid() async throws {
            for (serial, cure, port) in [("LADDER1", "reset", "1-36.1"), ("LADDER2", "reauthorize", "1-36.2"), ("LADDER3", "power-cycle", "1-36.3")] {
                let (manager, log) = try await HardwareTests.manager()
                let hubs = PortPower.Hubs()
                try hubs.plug("1-36", ports: 3)
                let device = try Sim.plug("1209:00f1:\(serial)", port: port)
                defer { if let now = try? Sim.device(serial: serial) { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
                let before = try #require(await PortPower.wait(for: serial, in: log, after: 0))
                #expect(try Sim.ctl("wedge", device.id, "--cured-by", cure) == ["ok"])
                let reports = manager.recoveries()
                let back = try await manager.recover(before, upTo: .powerCycle)
                let cureStep = try #require(RecoveryStep(name: cure))
                #expect(await PortPower.answers(manager, back), "\(cure): recovered means it answers")
                #expect(back.descriptor.serial == serial && back.descriptor.port == port)
                // Every connection a step ended is named by the next, and ended as recovered by
                // a step up to the cure: a chain from `before` to `back`.
                _ = await log.wait { $0.contains { if case .connected(let a) = $0 { a.connectionID == back.connectionID } else { false } } }
                let events = await log.events
                let chain = events.compactMap { if case .connected(let a) = $0, a.descriptor.serial == serial { a } else { nil } }
                #expect(chain.first?.connectionID == before.connectionID && chain.last?.connectionID == back.connectionID, "\(cure): \(chain)")
                for (old, new) in zip(chain, chain.dropFirst()) {
                    #expect(new.previousConnectionID == old.connectionID, "\(cure): each new connection names the one before")
                }
                let reasons = events.compactMap { if case .disconnected(let a, let r) = $0, a.descriptor.serial == serial { r } else { nil } }
                #expect(reasons.count == chain.count - 1, "\(cure): \(reasons)")
                for reason in reasons {
                    guard case .recovered(let step) = reason, step <= cureStep else {
                        Issue.record("\(cure): a connection ended as \(reason)")
                        continue
                    }
                }
                if cure == "reset" { #expect(back.connectionID == before.connectionID || back.previousConnectionID == before.connectionID) }
                var iterator = reports.makeAsyncIterator()
                let report = try #require(await iterator.next())
                #expect(report.steps.map(\.step) == RecoveryStep.ladder(upTo: cureStep), "\(cure): \(report.steps)")
                #expect(report.steps.last?.outcome == "recovered", "\(cure): \(report.steps)")
                #expect(report.steps.dropLast().allSatisfy { $0.outcome != "recovered" }, "\(cure): \(report.steps)")
                #expect(report.trigger == "requested" && report.port == port && report.accessory?.connectionID == back.connectionID)
                await manager.shutdown()
            }
        }

        @Test func aDeviceNoStepCuresFailsWithEveryStepNamedAndAGangedHubSkipped() async throws {
            let (manager, log) = try await HardwareTests.manager()
            let hubs = PortPower.Hubs()
            try hubs.plug("1-37", ports: 2, "--power", "ganged")
            let device = try Sim.plug("1209:00f2:DEAD", port: "1-37.2")
            defer { if let now = try? Sim.device(serial: "DEAD") { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
            let before = try #require(await PortPower.wait(for: "DEAD", in: log, after: 0))
            _ = try Sim.ctl("wedge", device.id, "--cured-by", "never")
            do {
                _ = try await manager.recover(before)
                Issue.record("a device no step cures was recovered")
            } catch {
                #expect(error.code == .io)
                for part in ["reset:", "reauthorize:", "power-cycle: hub 1-37 switches its ports together (ganged), skipped"] {
                    #expect(error.message.contains(part), "\(error.message) should name \(part)")
                }
            }
            await manager.shutdown()
        }

        @Test func theCommandStepRunsWithThePortInItsEnvironment() async throws {
            let dir = NSTemporaryDirectory() + "/recovery-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let script = dir + "/relay.sh"
            let seen = dir + "/seen"
            try "#!/bin/sh\necho \"$ACCESSORY_PORT $ACCESSORY_BUS\" > \(seen)\nexit 3\n".write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            let (manager, log) = try await HardwareTests.manager(
                configure: { $0.recovery = RecoveryPolicy(upTo: .command, command: [script]) })
            let device = try Sim.plug("1209:00f3:RELAY", port: "1-38")
            defer { if let now = try? Sim.device(serial: "RELAY") { try? Sim.unplug(now) } else { try? Sim.unplug(device) } }
            let before = try #require(await PortPower.wait(for: "RELAY", in: log, after: 0))
            _ = try Sim.ctl("wedge", device.id, "--cured-by", "never")
            do {
                _ = try await manager.recover(before, upTo: .command)
                Issue.record("recovered")
            } catch {
                #expect(error.message.contains("command: failed: \(script) exited with status 3"), "\(error.message)")
            }
            #expect(try String(contentsOfFile: seen, encoding: .utf8) == "1-38 1\n")
            await manager.shutdown()
        }
    }
}
