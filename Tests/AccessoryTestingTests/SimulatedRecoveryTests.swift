import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Synchronization
import Testing

/// The recovery ladder on a ``SimulatedUSB``, all on the virtual clock: a wedged device
/// answers again only after the step that cures it, a vanished one comes back only with a
/// power cycle of its port, and every port power change is logged.
@Suite("Recovery on the simulation")
struct SimulatedRecoveryTests {
    static let status = ControlRequest(.standard, request: 0)

    @Test("A device wedged until a step is recovered at exactly that step: earlier ones tried and failed, the connections chained, each ended as recovered", arguments: [RecoveryStep.reset, .reauthorize, .powerCycle])
    func eachWedgeIsCuredByItsStep(cure: RecoveryStep) async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("CURE\(cure.rawValue)"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            let log = EventLog(await manager.events(includingCurrent: false))
            var reports = manager.recoveries().makeAsyncIterator()
            await usb.wedge(device, curedBy: cure)
            // Wedged: a request times out, on the virtual clock.
            let wedged = try await Self.driving(usb) { try await manager.controlTransfer(from: before, Self.status, length: 2) }
            #expect(wedged.error?.code == .timeout, "\(wedged)")

            let back = try await Self.driving(usb) { try await manager.recover(before, upTo: .powerCycle) }.get()
            #expect(try await manager.controlTransfer(from: back, Self.status, length: 2) == [0, 0], "recovered means it answers")
            let echoed = try await manager.withSession(to: back, protocol: "org.example.loopback") { session throws(AccessoryError) in
                try await session.write([7, 8])
                return try await session.read()
            }
            #expect(echoed == [7, 8], "its transfers complete again")
            #expect(back.descriptor.serial == before.descriptor.serial && back.descriptor.port == "1-1")

            let report = try #require(await reports.next())
            #expect(report.steps.map(\.step) == RecoveryStep.ladder(upTo: cure), "\(report.steps)")
            #expect(report.steps.last?.outcome == "recovered", "\(report.steps)")
            for step in report.steps.dropLast() {
                #expect(step.outcome.contains("did not answer GET_STATUS"), "\(step.step.name) was tried and failed: \(step.outcome)")
            }
            #expect(report.trigger == "requested" && report.port == "1-1" && report.before.connectionID == before.connectionID)
            #expect(report.accessory?.connectionID == back.connectionID && report.recovered)

            // The connections from `before` to `back`, each named by the next and ended as
            // recovered by the step that re-enumerated it.
            let expected = cure == .reset ? 0 : cure == .reauthorize ? 2 : 4
            let events = await log.events(count: expected)
            let chain = [before] + events.compactMap { if case .connected(let a) = $0 { a } else { nil } }
            let reasons = events.compactMap { if case .disconnected(_, let r) = $0 { r } else { nil } }
            #expect(chain.last?.connectionID == back.connectionID, "\(chain)")
            for (old, new) in zip(chain, chain.dropFirst()) {
                #expect(new.previousConnectionID == old.connectionID, "each new connection names the one before")
                #expect(new.descriptor.address != old.descriptor.address, "it came back at the next address")
            }
            switch cure {
            case .reset:
                // A reset keeps the device in place: the same connection, at the same address.
                #expect(back.connectionID == before.connectionID && reasons.isEmpty, "\(events)")
                #expect(await usb.devices.first?.address == device.address)
            case .reauthorize:
                #expect(reasons == [.recovered(.reauthorize)], "\(reasons)")
            default:
                // Reauthorized back still wedged, then power-cycled.
                #expect(reasons == [.recovered(.reauthorize), .recovered(.powerCycle)], "\(reasons)")
            }
            #expect(await usb.powerLog == (cure == .powerCycle ? ["1-1 off", "1-1 on"] : []))
        }
    }

    @Test("A device no step cures: recover throws, naming every step and what it came to; the device stays, still wedged")
    func nothingCures() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("NEVER"), port: "1-2")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            var reports = manager.recoveries().makeAsyncIterator()
            await usb.wedge(device, curedBy: nil)
            // Its transfers time out too, on the virtual clock.
            let session = try await manager.openSession(to: before, protocol: "org.example.loopback")
            try await session.write([1])
            let flush = try await Self.driving(usb) { try await session.flush(timeout: .seconds(2)) }
            #expect(flush.error?.code == .timeout, "\(flush)")
            await session.close()
            let result = try await Self.driving(usb) { try await manager.recover(before, upTo: .command) }
            let error = try #require(result.error)
            #expect(error.code == .io)
            for part in ["reset: came back but did not answer GET_STATUS", "reauthorize: came back but did not answer GET_STATUS",
                "power-cycle: came back but did not answer GET_STATUS", "command: no command is configured, skipped"]
            {
                #expect(error.message.contains(part), "\(error.message) should say \(part)")
            }
            let report = try #require(await reports.next())
            #expect(report.steps.map(\.step) == RecoveryStep.allCases && !report.recovered && report.accessory == nil)
            #expect(await usb.powerLog == ["1-2 off", "1-2 on"])
            // Still there (at a later address), still wedged.
            let now = try #require(await manager.connectedAccessories.first)
            #expect(now.descriptor.serial == "NEVER" && now.descriptor.address != before.descriptor.address)
            let still = try await Self.driving(usb) { try await manager.controlTransfer(from: now, Self.status, length: 2) }
            #expect(still.error?.code == .timeout)
        }
    }

    @Test("A vanished device comes back only when its port is power-cycled (backOn .powerCycle), and never with nil")
    func vanishAndPower() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("VANISH"), port: "1-3")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            let log = EventLog(await manager.events(includingCurrent: false))
            await usb.vanish(device, backOn: .powerCycle)
            #expect(await usb.devices.isEmpty)
            #expect(await manager.connectedAccessories.isEmpty)
            #expect(await log.events(count: 1) == [.disconnected(before, .unplugged)], "\(log.events)")
            // Not connected: there is nothing to recover.
            let lost = await Self.result { try await manager.recover(before) }
            #expect(lost.error?.code == .notFound)

            // The port's hub switches its ports one by one.
            let hubs = await manager.hubs()
            #expect(hubs.map(\.name) == ["usb1"] && hubs.first?.switching == .perPort)
            #expect(hubs.first?.ports.first { $0.name == "1-3" }?.powered == true)

            let cycled = try await Self.driving(usb) { try await manager.cyclePortPower("1-3", pause: .milliseconds(100)) }.get()
            #expect(cycled.map(\.on) == [false, true] && cycled.allSatisfy { $0.port == "1-3" && $0.hub == "usb1" })
            #expect(await usb.powerLog == ["1-3 off", "1-3 on"])
            let back = try #require(await manager.connectedAccessories.first)
            #expect(back.descriptor.serial == "VANISH" && back.descriptor.address != before.descriptor.address)
            #expect(try await manager.controlTransfer(from: back, Self.status, length: 2) == [0, 0])

            // Off, then on: the port shows it, and what is on it leaves and comes back.
            let seen = await log.events(count: 2).count
            _ = try await manager.setPortPower("1-3", on: false)
            #expect(await manager.connectedAccessories.isEmpty)
            #expect(
                await log.events(count: seen + 1).dropFirst(seen).first == .disconnected(back, .unplugged),
                "outside a recovery, a port switched off is an unplug")
            #expect(await manager.hubs().first?.ports.first { $0.name == "1-3" }?.powered == false)
            _ = try await manager.setPortPower("1-3", on: true)
            #expect(await manager.connectedAccessories.map(\.descriptor.serial) == ["VANISH"])

            // backOn nil: a power cycle brings nothing back.
            let current = try #require(await usb.devices.first)
            await usb.vanish(current, backOn: nil)
            _ = try await Self.driving(usb) { try await manager.cyclePortPower("1-3", pause: .milliseconds(100)) }.get()
            #expect(await usb.devices.isEmpty)
            #expect(await manager.connectedAccessories.isEmpty)
            #expect(await usb.powerLog == ["1-3 off", "1-3 on", "1-3 off", "1-3 on", "1-3 off", "1-3 on"])
        }
    }

    @Test("A device that vanishes during a recovery is brought back by the power cycle: the reauthorization is skipped, as it is not enumerated")
    func vanishMidRecovery() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("MIDWAY"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            var reports = manager.recoveries().makeAsyncIterator()
            await usb.wedge(device, curedBy: .powerCycle)
            let recovery = Task { try await manager.recover(before) }
            // The reset step waits on the clock for the device: it vanishes then.
            #expect(await usb.waitForSleepers(1))
            await usb.vanish(device, backOn: .powerCycle)
            let back = try await Self.driving(usb) { try await recovery.value }.get()
            #expect(back.descriptor.serial == "MIDWAY" && back.descriptor.address != before.descriptor.address)
            #expect(try await manager.controlTransfer(from: back, Self.status, length: 2) == [0, 0])
            let report = try #require(await reports.next())
            #expect(report.steps.map(\.step) == [.reset, .reauthorize, .powerCycle], "\(report.steps)")
            #expect(report.steps[1].outcome == "the device is not enumerated, skipped", "\(report.steps)")
            #expect(report.steps[2].outcome == "recovered")
            #expect(await usb.powerLog == ["1-1 off", "1-1 on"])
        }
    }

    /// Decided: a device the user unplugs while a step is expected to drop it ends as
    /// `.recovered(step)` (the kernel shows both alike); the recovery then fails cleanly.
    @Test("The user unplugs the device mid-recovery: the recovery fails cleanly with .io, its connection ended as recovered by the step under way, nothing hangs")
    func unplugMidRecovery() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("PULLED"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            let log = EventLog(await manager.events(includingCurrent: false))
            var reports = manager.recoveries().makeAsyncIterator()
            await usb.wedge(device, curedBy: .powerCycle)
            let recovery = Task { try await manager.recover(before) }
            #expect(await usb.waitForSleepers(1))
            await usb.unplug(device)
            let result = try await Self.driving(usb) { try await recovery.value }
            #expect(result.error?.code == .io, "\(result)")
            let report = try #require(await reports.next())
            #expect(!report.recovered && report.steps.map(\.step) == [.reset, .reauthorize, .powerCycle], "\(report.steps)")
            #expect(report.steps[1].outcome == "the device is not enumerated, skipped")
            #expect(report.steps[2].outcome.contains("did not come back on port 1-1"), "\(report.steps)")
            #expect(await log.events(count: 1) == [.disconnected(before, .recovered(.reset))], "\(log.events)")
            #expect(await usb.devices.isEmpty)
            #expect(await manager.connectedAccessories.isEmpty)
            // The power cycle found the port empty and brought nothing back.
            #expect(await usb.powerLog == ["1-1 off", "1-1 on"])
        }
    }

    @Test("The DocC example: a device wedged until a reauthorization is back after one advance of 5 s, with no power change")
    func docExample() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("DOC"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            await usb.wedge(device, curedBy: .reauthorize)
            let recovery = Task { try await manager.recover(accessory) }
            await usb.advance(by: .seconds(5))
            let back = try await recovery.value
            #expect(back.previousConnectionID == accessory.connectionID)
            #expect(await usb.powerLog.isEmpty)
        }
    }

    // MARK: Helpers

    @Test("Automatic recovery keeps its budget: a device nothing cures is tried once, then the next trigger is reported as skipped")
    func automaticRecoveryKeepsItsBudget() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.accessory("BUDGET"), port: "1-3")
        var configuration = AccessoryManager.Configuration()
        configuration.recovery = RecoveryPolicy(upTo: .reset, afterTimeouts: 1, budget: 1, per: .seconds(3600))
        try await withAccessoryManager(configuration: configuration, usb: usb) { manager in
            let reports = Mutex<[RecoveryReport]>([])
            let collecting = Task { for await report in manager.recoveries() { reports.withLock { $0.append(report) } } }
            defer { collecting.cancel() }
            await usb.wedge(device, curedBy: nil)
            for attempt in 1...2 {
                let current = try #require(await manager.connectedAccessories.first, "attempt \(attempt)")
                let session = try await manager.openSession(to: current, protocol: "org.example.loopback")
                let read = try await Self.driving(usb) { try await session.transferIn(0x81, length: 64, timeout: .seconds(1)) }
                #expect(read.error != nil, "a wedged device's transfer does not complete: \(read)")
                _ = try await Self.driving(usb) {
                    // A poll, bounded by driving's two virtual minutes: the report comes as the
                    // virtual clock that driving moves reaches it.
                    while reports.withLock({ $0.count }) < attempt { try await Task.sleep(for: .milliseconds(1)) }
                }
                await session.close()
            }
            let all = reports.withLock { $0 }
            try #require(all.count == 2, "\(all)")
            #expect(all[0].steps.map(\.step) == [.reset], "\(all[0].steps)")
            #expect(!all[0].recovered && all[0].skipped == nil && all[0].trigger.contains("timeout"), "\(all[0])")
            #expect(all[1].steps.isEmpty && !all[1].recovered, "\(all[1])")
            #expect(all[1].skipped?.contains("budget") == true, "\(all[1])")
            #expect(await usb.devices.count == 1, "the device stays, still wedged")
        }
    }

    static func accessory(_ serial: String) -> SimulatedAccessory {
        SimulatedAccessory(vendor: 0x1209, product: 0x00f1, serial: serial)
    }

    /// Runs `work` while moving the virtual clock on, 50 ms at a time (up to two virtual
    /// minutes), until it ends.
    static func driving<T: Sendable>(
        _ usb: SimulatedUSB, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> Result<T, AccessoryError> {
        let done = Flag()
        let task = Task {
            defer { done.set() }
            return await result(work)
        }
        var steps = 0
        while !done.isSet {
            try #require(steps < 2400, "still running after two virtual minutes")
            await usb.advance(by: .milliseconds(50))
            steps += 1
        }
        return await task.value
    }

    static func result<T>(_ work: () async throws -> T) async -> Result<T, AccessoryError> {
        do {
            return .success(try await work())
        } catch let error as AccessoryError {
            return .failure(error)
        } catch {
            return .failure(AccessoryError(.io, "\(error)", operation: "test"))
        }
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// Every event of a stream, as it comes.
    final class EventLog: Sendable {
        private let list = Mutex<[AccessoryEvent]>([])
        init(_ stream: AsyncStream<AccessoryEvent>) {
            Task { [self] in
                for await event in stream { list.withLock { $0.append(event) } }
            }
        }
        var events: [AccessoryEvent] { list.withLock { $0 } }

        /// The events once `count` have come (by yielding, a bounded number of turns).
        func events(count: Int) async -> [AccessoryEvent] {
            var turns = 0
            while events.count < count && turns < 100_000 {
                await Task.yield()
                turns += 1
            }
            return events
        }
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let e) = self { e } else { nil }
    }
}
