import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Synchronization
import Testing

/// Sessions on simulated accessories, end to end through the real manager and data plane.
@Suite("Sessions on simulated accessories")
struct SimulatedSessionTests {
    static let loopback = "org.example.loopback"

    static func code(_ body: () async throws(AccessoryError) -> Void) async -> AccessoryError.Code? {
        do {
            try await body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test("The default responder echoes: write, flush, read(exactly:), the Data and String forms")
    func echo() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let answer = try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                try await session.write("ping")
                try await session.flush()
                return try await session.read(exactly: 4)
            }
            #expect(answer == Array("ping".utf8))
        }
    }

    @Test("A device that a ProtocolTable rule maps, with supportedProtocols set, is shown and opens, as in production")
    func protocolTableRule() async throws {
        let usb = SimulatedUSB()
        // One bulk pair with no interface string, as most real devices have.
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0042, serial: "FP1", protocols: [""]))
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0043, serial: "OTHER", protocols: [""]))
        let configuration = AccessoryManager.Configuration(
            supportedProtocols: ["com.example.reader"],
            protocolTable: ProtocolTable(rules: [.device(vendor: 0x1209, product: 0x0042, speaks: "com.example.reader")]))
        try await withAccessoryManager(configuration: configuration, usb: usb) { manager in
            let shown = await manager.connectedAccessories
            #expect(shown.map(\.descriptor.serial) == ["FP1"])
            let accessory = try #require(shown.first)
            #expect(accessory.descriptor.protocols == ["com.example.reader"])
            let answer = try await manager.withSession(to: accessory, protocol: "com.example.reader") { session in
                try await session.write("ping")
                try await session.flush()
                return try await session.read(exactly: 4)
            }
            #expect(answer == Array("ping".utf8))
            // A hotplug arrival is judged by the same table.
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0042, serial: "FP2", protocols: [""]))
            #expect(await manager.connectedAccessories.map(\.descriptor.serial) == ["FP1", "FP2"])
        }
    }

    @Test("A custom responder is the accessory's side: it sees what the host writes, per interface")
    func customResponder() async throws {
        let usb = SimulatedUSB()
        let seen = Mutex<[(Int, [UInt8])]>([])
        let counter = SimulatedAccessory(
            vendor: 0x1209, product: 0x0002, serial: "C1", protocols: ["com.example.a", "com.example.count"],
            responder: SimulatedResponder { interface, bytes in
                seen.withLock { $0.append((interface, bytes)) }
                return .respond([Array(String(bytes.count).utf8)])
            })
        await usb.plug(counter)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let answer = try await manager.withSession(to: accessory, protocol: "com.example.count") { session in
                try await session.write([UInt8](repeating: 7, count: 12))
                return try await session.read()
            }
            #expect(answer == Array("12".utf8))
        }
        #expect(seen.withLock { $0.map(\.0) } == [1])
    }

    @Test("An unplug ends a waiting read with .accessoryDisconnected(.unplugged)")
    func unplugEndsTheRead() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let session = try await manager.openSession(to: accessory, protocol: Self.loopback)
            let reader = Task { await Self.code { () async throws(AccessoryError) in _ = try await session.read() } }
            await usb.unplug(device)
            #expect(await reader.value == .accessoryDisconnected(.unplugged))
            #expect(await Self.code { () async throws(AccessoryError) in try await session.write([1]); try await session.flush() }
                == .accessoryDisconnected(.unplugged))
            await session.close()
        }
    }

    @Test("A silent unplug ends the session as the manager's ghost eviction says, at the next reconcile")
    func silentUnplugIsAGhost() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(2)), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            let session = try await manager.openSession(to: accessory, protocol: Self.loopback)
            await usb.unplug(device, silently: true)
            // The session reads nothing yet, so no transfer of its own finds the device gone:
            // the periodic reconcile (at 2 s) does, and evicts it once the wait for its LEFT
            // event (250 ms) has passed.
            await usb.advance(by: .seconds(3))
            let event = await events.next()
            guard case .disconnected(_, let reason) = event else { Issue.record("\(String(describing: event))"); return }
            #expect(reason.code == "ghost-evicted")
            let code = await Self.code { () async throws(AccessoryError) in _ = try await session.read() }
            #expect(code == .accessoryDisconnected(reason), "the session ends with the manager's own reason")
            await session.close()
        }
    }

    @Test("A stalled endpoint throws .stall until clearHalt(); then the session goes on")
    func stall() async throws {
        let usb = SimulatedUSB()
        let stallNext = Mutex(true)
        let moody = SimulatedAccessory(
            vendor: 0x1209, product: 0x0003, serial: "M1",
            responder: SimulatedResponder { _, bytes in
                stallNext.withLock { s in defer { s = false }; return s } ? .stall : .respond([bytes])
            })
        await usb.plug(moody)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                let first = await Self.code { () async throws(AccessoryError) in try await session.write([1, 2]); try await session.flush() }
                #expect(first == .stall)
                try await session.clearHalt()
                try await session.write([3, 4])
                #expect(try await session.read(exactly: 2) == [3, 4])
            }
        }
    }

    @Test("A second session on the same protocol is .busy and names the holder")
    func busy() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: Self.loopback, name: "first") { _ in
                do throws(AccessoryError) {
                    _ = try await manager.openSession(to: accessory, protocol: Self.loopback)
                    Issue.record("a second session opened")
                } catch {
                    #expect(error.code == .busy && error.message.contains("'first'"))
                }
            }
        }
    }
}

@Suite("Session timing on the virtual clock")
struct SimulatedSessionTimingTests {
    @Test("A read timeout falls due in virtual time: nothing before it, .timeout at it, and the session goes on", .timeLimit(.minutes(1)))
    func readTimeout() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                let clock = usb.clock
                let start = clock.now
                let outcome = Mutex<(code: AccessoryError.Code?, at: SimulatedClock.Instant)?>(nil)
                let reader = Task {
                    let code = await SimulatedSessionTests.code { () async throws(AccessoryError) in _ = try await session.read(timeout: .seconds(30)) }
                    outcome.withLock { $0 = (code, clock.now) }
                }
                #expect(await usb.waitForSleepers(1), "the read's timeout waits on the virtual clock")
                await usb.advance(by: .seconds(29))
                #expect(outcome.withLock { $0 } == nil, "nothing falls due before the timeout")
                await usb.advance(by: .seconds(1))
                // The timeout fell due at 30 s: the read ends with no more time passing.
                await reader.value
                let (code, at) = try #require(outcome.withLock { $0 })
                #expect(code == .timeout)
                #expect(start.duration(to: at) == .seconds(30))
                try await session.write([9])
                #expect(try await session.read(exactly: 1) == [9])
            }
        }
    }

    @Test("withSession flushes what the body wrote before it closes")
    func withSessionFlushes() async throws {
        let usb = SimulatedUSB()
        let received = Mutex<[UInt8]>([])
        let recorder = SimulatedAccessory(
            vendor: 0x1209, product: 0x0004, serial: "R1",
            responder: SimulatedResponder { _, bytes in received.withLock { $0 += bytes }; return .respond([]) })
        await usb.plug(recorder)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: "org.example.loopback") { session in
                try await session.write([UInt8](repeating: 5, count: 100_000))
            }
        }
        #expect(received.withLock { $0.count } == 100_000)
    }

    @Test("withSession has typed throws: a body that throws only AccessoryError makes the call throw AccessoryError")
    func withSessionTypedThrows() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            // The open fails (no such protocol). `do throws(AccessoryError)` compiles only
            // because the call has typed throws.
            do throws(AccessoryError) {
                try await manager.withSession(to: accessory, protocol: "com.example.absent") { (_) throws(AccessoryError) -> Void in }
                Issue.record("a session opened for a protocol the accessory lacks")
            } catch {
                let typed: AccessoryError = error
                #expect(typed.code == .protocolNotSupported)
            }
            // The body's own AccessoryError comes through as it is.
            do throws(AccessoryError) {
                try await manager.withSession(to: accessory, protocol: SimulatedSessionTests.loopback) {
                    (session) throws(AccessoryError) -> Void in
                    try await session.write([1])
                    throw AccessoryError(.stall, "the body's own error")
                }
                Issue.record("the body's error was lost")
            } catch {
                let typed: AccessoryError = error
                #expect(typed.code == .stall && typed.message == "the body's own error")
            }
        }
    }
}
