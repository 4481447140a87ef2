import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Testing

/// A wait on the virtual clock that nothing advances ends, in real time, with an error that
/// says how to move the clock, instead of hanging the test.
@Suite("A stalled virtual clock")
struct StalledClockTests {
    /// What a call ended with, or `nil` when it was still waiting after `limit` of real time
    /// (then it is cancelled, so that this test never hangs).
    static func outcome(
        within limit: Duration = .seconds(30), _ body: @escaping @Sendable () async throws -> Void
    ) async -> Result<Void, AccessoryError>? {
        await withTaskGroup(of: Result<Void, AccessoryError>?.self) { group in
            group.addTask {
                do {
                    try await body()
                    return .success(())
                } catch {
                    return .failure(error as? AccessoryError ?? AccessoryError(.io, "not an AccessoryError: \(error)"))
                }
            }
            group.addTask {
                // Real time on purpose: what is tested is that a call stuck on a virtual clock
                // nobody moves ends by itself in real time; this is the test's own deadline.
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    static func expectNamesTheFix(_ result: Result<Void, AccessoryError>?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failure(let error) = result else {
            Issue.record("expected the stalled clock's error, got \(String(describing: result))", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .timeout, sourceLocation: sourceLocation)
        #expect(error.message.contains("usb.advance(by:)"), "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains("Task {"), "\(error)", sourceLocation: sourceLocation)
    }

    @Test("A sleep on the clock of a SimulatedUSB the test let go of ends at once, saying so, instead of keeping the simulation alive")
    func releasedSimulationEndsItsSleepers() async throws {
        var usb: SimulatedUSB? = SimulatedUSB()
        let clock = usb!.clock
        weak let released = usb
        let sleeping = Task { () -> AccessoryError? in
            do {
                try await clock.sleep(for: .seconds(60))
                return nil
            } catch {
                return error as? AccessoryError
            }
        }
        #expect(await usb!.waitForSleepers(1))
        let started = ContinuousClock.now
        usb = nil
        let error = await sleeping.value
        #expect(released == nil, "nothing else holds the simulation")
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("is gone") == true, "\(String(describing: error))")
        // Well before the 8 s watchdog, which would also end it.
        #expect(started.duration(to: .now) < .seconds(4))
    }

    @Test("switchToAccessoryMode awaited inline on a device that never re-enumerates ends with the fix, not a hang")
    func inlineSwitch() async throws {
        let usb = SimulatedUSB()
        await usb.setStallLimit(.milliseconds(300))
        await usb.plug(AndroidAccessoryTests.aoaResponder(serial: "NEVER"))
        try await withAccessoryManager(usb: usb) { manager in
            let device = try #require(await manager.connectedAccessories.first)
            let started = ContinuousClock.now
            let result = await Self.outcome {
                _ = try await manager.switchToAccessoryMode(device, identity: AndroidAccessoryTests.identity)
            }
            Self.expectNamesTheFix(result)
            // A bound on a hang, not a timing: alone it ends in about 0.3 s, but it waits out
            // several 300 ms stall limits of wall time, and with the suite running beside it on
            // a loaded 2-core machine it took 11 to 17 s.
            #expect(started.duration(to: .now) < .seconds(60))
            #expect(await manager.connectedAccessories == [device], "the device stays")
        }
    }

    @Test("A read with a timeout awaited inline against .sink ends with the fix, and the session stays usable")
    func inlineRead() async throws {
        let usb = SimulatedUSB()
        await usb.setStallLimit(.milliseconds(300))
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SINK", responder: .sink))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let session = try await manager.openSession(to: accessory, protocol: "org.example.loopback")
            let result = await Self.outcome { _ = try await session.read(timeout: .seconds(1)) }
            Self.expectNamesTheFix(result)
            // Run in a task and advanced, the same read times out in virtual time as usual.
            let reading = Task { () async -> AccessoryError.Code? in
                do throws(AccessoryError) {
                    _ = try await session.read(timeout: .seconds(1))
                    return nil
                } catch {
                    return error.code
                }
            }
            #expect(await usb.waitForSleepers())
            await usb.advance(by: .seconds(1))
            #expect(await reading.value == .timeout)
            await session.close()
        }
    }

    @Test("A sleep on the clock that the test does advance, however slowly in real time, is not cut short")
    func advancedSleepIsNotCut() async throws {
        let usb = SimulatedUSB()
        await usb.setStallLimit(.seconds(4))
        let clock = usb.clock
        let sleeping = Task { () async -> Bool in
            do {
                try await clock.sleep(for: .seconds(5))
                return true
            } catch {
                return false
            }
        }
        #expect(await usb.waitForSleepers())
        // More real time than the limit passes in all (20 × 250 ms against 4 s), but each
        // step moves the clock; the pause is the point of the test (slow real time), and a
        // step has 16 times its length before the limit, for a loaded machine (8 times was
        // not enough under ThreadSanitizer beside two builds).
        for _ in 0..<20 {
            // Slow real time between steps is what is tested (see above).
            try await Task.sleep(for: .milliseconds(250))
            await usb.advance(by: .milliseconds(300))
        }
        #expect(await sleeping.value)
    }
}
