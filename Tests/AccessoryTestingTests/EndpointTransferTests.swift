import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Synchronization
import Testing

/// Every endpoint of a session, one transfer per call, on a simulated fingerprint-reader-like
/// accessory: bulk OUT 0x01, bulk IN 0x82, interrupt IN 0x83.
@Suite("One-transfer calls on every endpoint (simulated)", .timeLimit(.minutes(1)))
struct EndpointTransferTests {
    static let reader = "com.example.reader"
    static let endpoints = [
        AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 64),
        AccessoryEndpoint(address: 0x82, kind: .bulk, maxPacketSize: 64),
        AccessoryEndpoint(address: 0x83, kind: .interrupt, maxPacketSize: 8),
    ]
    /// Alternate setting 1: the interrupt endpoint moves to 0x84 with larger packets.
    static let setting1 = [
        AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 64),
        AccessoryEndpoint(address: 0x82, kind: .bulk, maxPacketSize: 64),
        AccessoryEndpoint(address: 0x84, kind: .interrupt, maxPacketSize: 64),
    ]

    /// A device, held weakly.
    final class Holder: Sendable {
        private let box = Mutex<Weak>(Weak())
        private struct Weak { weak var device: Device? }
        var device: Device? {
            get { box.withLock { $0.device } }
            set { box.withLock { $0.device = newValue } }
        }
    }

    /// What the accessory saw, and its handle on its endpoints.
    final class Device: Sendable {
        let seen = Mutex<[SimulatedTransfer]>([])
        let context = Mutex<SimulatedResponder.Context?>(nil)
        let answer: @Sendable (SimulatedTransfer) -> SimulatedTransfer.Answer

        init(_ answer: @escaping @Sendable (SimulatedTransfer) -> SimulatedTransfer.Answer) {
            self.answer = answer
        }

        /// The accessory's side. It holds this object weakly: the object holds the responder's
        /// context, which holds the responder (a cycle, which LeakSanitizer reports, otherwise).
        var responder: SimulatedResponder {
            SimulatedResponder { [weak self] transfer, device in
                guard let self else { return .never }
                self.seen.withLock { $0.append(transfer) }
                self.context.withLock { $0 = device }
                return self.answer(transfer)
            }
        }

        /// The bulk and interrupt transfers seen, as `(endpoint, data or length)`.
        var transfers: [SimulatedTransfer] { seen.withLock { $0.filter { $0.kind != .control } } }
        var inEndpointsAsked: [UInt8] { transfers.filter(\.isIn).map(\.endpoint) }

        func queue(_ bytes: [UInt8], on endpoint: UInt8) {
            context.withLock { $0 }?.queue(bytes, on: endpoint)
        }
    }

    /// A reader whose commands on 0x01 are answered on 0x82 (the bytes reversed), and whose
    /// interrupt IN 0x83 reports what `interrupt` says.
    static func commandDevice(interrupt: @escaping @Sendable (SimulatedTransfer) -> SimulatedTransfer.Answer = { _ in .queued }) -> Device {
        let holder = Holder()  // weakly: the device's answer holds the holder
        let device = Device { transfer in
            switch transfer.endpoint {
            case 0x01:
                holder.device?.queue(transfer.data.reversed(), on: 0x82)
                return .accept
            case 0x83, 0x84:
                return interrupt(transfer)
            default:
                return .queued
            }
        }
        holder.device = device
        return device
    }

    static func accessory(_ device: Device, alternates: [[AccessoryEndpoint]] = []) -> SimulatedAccessory {
        SimulatedAccessory(
            vendor: 0x1209, product: 0x0042, serial: "FP1",
            interfaces: [SimulatedInterface(protocol: reader, endpoints: endpoints, alternateSettings: alternates)],
            responder: device.responder)
    }

    /// Runs `body` with a session on the reader.
    static func withReader(
        _ device: Device, alternates: [[AccessoryEndpoint]] = [],
        _ body: (SimulatedUSB, SimulatedDevice, AccessorySession) async throws -> Void
    ) async throws {
        let usb = SimulatedUSB()
        let plugged = await usb.plug(accessory(device, alternates: alternates))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let session = try await manager.openSession(to: accessory, protocol: reader)
            do {
                try await body(usb, plugged, session)
            } catch {
                await session.close()
                throw error
            }
            await session.close()
        }
    }

    static func error(_ body: () async throws(AccessoryError) -> Void) async -> AccessoryError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    /// Yields until `condition` holds (a bounded number of turns); `false` if it never does.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test("The session lists the interface's endpoints; a transfer on each reaches its endpoint")
    func transfersOnEachEndpoint() async throws {
        let device = Self.commandDevice { _ in .data([0xee, 0x01]) }
        try await Self.withReader(device) { usb, _, session in
            #expect(session.endpoints == Self.endpoints)
            #expect(session.alternateSetting == 0)
            try await session.transferOut(0x01, [1, 2, 3], timeout: .seconds(1))
            #expect(try await session.transferIn(0x82, length: 64, timeout: .seconds(1)) == [3, 2, 1])
            #expect(try await session.transferIn(0x83, length: 8, timeout: .seconds(1)) == [0xee, 0x01])
            let seen = device.transfers
            try #require(seen.map(\.endpoint) == [0x01, 0x82, 0x83])
            #expect(seen.map(\.kind) == [.bulk, .bulk, .interrupt])
            #expect(seen[0].data == [1, 2, 3] && seen[0].interface == 0)
            #expect(seen[1].length == 64 && seen[2].length == 8)
        }
    }

    @Test("No IN transfer is submitted on an endpoint before the code reads from it")
    func noInBeforeRead() async throws {
        let device = Self.commandDevice { _ in .data([0x01]) }
        try await Self.withReader(device) { usb, _, session in
            await usb.advance(by: .seconds(1))
            #expect(device.inEndpointsAsked == [], "opening a session reads nothing")
            try await session.transferOut(0x01, [0xa7, 0xfe])
            await usb.advance(by: .seconds(1))
            #expect(device.inEndpointsAsked == [], "a command does not start a read either")
            _ = try await session.transferIn(0x83, length: 8)
            await usb.advance(by: .seconds(1))
            #expect(device.inEndpointsAsked == [0x83], "one call, one IN transfer, on its endpoint only")
            // The stream's first read starts the input on 0x82, and only then.
            #expect(try await session.read(timeout: .seconds(1)) == [0xfe, 0xa7])
            #expect(device.inEndpointsAsked.first { $0 == 0x82 } != nil)
        }
    }

    @Test("Calls on different endpoints run concurrently: a waiting interrupt IN holds nothing else up")
    func concurrentEndpoints() async throws {
        let device = Self.commandDevice { _ in .after(.seconds(5), .data([0x42])) }
        try await Self.withReader(device) { usb, _, session in
            let event = Task { try await session.transferIn(0x83, length: 8) }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            // The bulk pair goes back and forth while 0x83 waits, with no time passing.
            for i in 0..<3 {
                try await session.transferOut(0x01, [UInt8(i), 9])
                #expect(try await session.transferIn(0x82, length: 64) == [9, UInt8(i)])
            }
            #expect(session.callsInFlight == 1, "the interrupt IN still waits")
            await usb.advance(by: .seconds(5))
            #expect(try await event.value == [0x42])
        }
    }

    @Test("Calls on one endpoint complete in the order they were made; a cancelled one ends at once")
    func orderOnOneEndpoint() async throws {
        let device = Self.commandDevice()
        try await Self.withReader(device) { usb, _, session in
            var calls: [Task<[UInt8], any Error>] = []
            for i in 0..<4 {
                calls.append(Task { try await session.transferIn(0x83, length: 8) })
                #expect(await Self.eventually { session.callsInFlight == i + 1 })
            }
            // The third is cancelled while the first still waits: it ends now, with nothing.
            calls[2].cancel()
            let cancelled = await Self.error { () async throws(AccessoryError) in
                do { _ = try await calls[2].value } catch let e as AccessoryError { throw e } catch {}
            }
            #expect(cancelled?.code == .cancelled)
            #expect(session.callsInFlight == 3)
            for n in [1, 2, 3] as [UInt8] { device.queue([n], on: 0x83) }
            let (first, second, fourth) = (try await calls[0].value, try await calls[1].value, try await calls[3].value)
            #expect(first == [1] && second == [2] && fourth == [3])
            #expect(device.inEndpointsAsked.allSatisfy { $0 == 0x83 })
        }
    }

    @Test("An endpoint not on the interface, or of the other direction, is .notFound naming it, and nothing is sent")
    func notFound() async throws {
        let device = Self.commandDevice()
        try await Self.withReader(device) { usb, _, session in
            let cases: [(String, () async throws(AccessoryError) -> Void)] = [
                ("0x01", { () async throws(AccessoryError) in _ = try await session.transferIn(0x01, length: 8) }),
                ("0x84", { () async throws(AccessoryError) in _ = try await session.transferIn(0x84, length: 8) }),
                ("0x82", { () async throws(AccessoryError) in try await session.transferOut(0x82, [1]) }),
                ("0x02", { () async throws(AccessoryError) in try await session.transferOut(0x02, [1]) }),
                ("0x05", { () async throws(AccessoryError) in try await session.clearHalt(0x05) }),
            ]
            for (name, call) in cases {
                let error = await Self.error(call)
                #expect(error?.code == .notFound, "\(name): \(String(describing: error))")
                #expect(error?.message.contains(name) == true, "\(name): \(String(describing: error))")
            }
            await usb.advance(by: .zero)
            #expect(device.transfers.isEmpty, "nothing was submitted")
        }
    }

    @Test("A length outside 0...16 MiB, more than 16 MiB to send or a negative timeout is .invalidArgument before anything is sent, naming the value")
    func badArguments() async throws {
        let device = Self.commandDevice { transfer in .data(Array(repeating: 1, count: min(transfer.length, 3))) }
        try await Self.withReader(device) { usb, _, session in
            for length in [-1, (16 << 20) + 1, Int.max, Int.min] {
                let error = await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: length) }
                #expect(
                    error?.code == .invalidArgument && error?.message.contains("length \(length) is out of range: 0...16777216") == true,
                    "\(String(describing: error))")
            }
            let negative = await Self.error { () async throws(AccessoryError) in
                _ = try await session.transferIn(0x83, length: 8, timeout: .seconds(-1))
            }
            #expect(negative?.code == .invalidArgument)
            let negativeOut = await Self.error { () async throws(AccessoryError) in
                try await session.transferOut(0x01, [1], timeout: .milliseconds(-5))
            }
            #expect(negativeOut?.code == .invalidArgument)
            let tooLong = await Self.error { () async throws(AccessoryError) in
                try await session.transferOut(0x01, [UInt8](repeating: 0, count: (16 << 20) + 1))
            }
            #expect(
                tooLong?.code == .invalidArgument && tooLong?.message.contains("byte count 16777217 is out of range: 0...16777216") == true,
                "\(String(describing: tooLong))")
            await usb.advance(by: .zero)
            #expect(device.transfers.isEmpty)
            // The bounds themselves are fine.
            let empty = try await session.transferIn(0x83, length: 0)
            let beyondWLength = try await session.transferIn(0x83, length: 65_536)
            let longest = try await session.transferIn(0x83, length: 16 << 20)
            #expect(empty == [] && beyondWLength == [1, 1, 1] && longest == [1, 1, 1])
        }
    }

    @Test("A zero-length OUT transfer reaches the accessory as one; a zero-length IN packet is []")
    func zeroLength() async throws {
        let device = Self.commandDevice { _ in .accept }
        try await Self.withReader(device) { usb, _, session in
            try await session.transferOut(0x01, [])
            #expect(try await session.transferIn(0x83, length: 8) == [])
            let seen = device.transfers
            #expect(seen.first?.endpoint == 0x01 && seen.first?.data == [] && seen.first?.length == 0)
            // The empty command's (empty) answer waits on 0x82 as a zero-length packet.
            #expect(try await session.transferIn(0x82, length: 64) == [])
        }
    }

    @Test("A stall throws .stall and halts the endpoint until clearHalt; the other endpoints go on")
    func stallAndClearHalt() async throws {
        let stalls = Mutex(1)
        let device = Self.commandDevice { _ in
            stalls.withLock { n in defer { n -= 1 }; return n > 0 } ? .stall : .data([7])
        }
        try await Self.withReader(device) { usb, _, session in
            let first = await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) }
            #expect(first?.code == .stall)
            #expect(first?.message.contains("clearHalt(0x83)") == true, "\(String(describing: first))")
            let again = await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) }
            #expect(again?.code == .stall, "the endpoint stays halted")
            try await session.transferOut(0x01, [5, 6])
            #expect(try await session.transferIn(0x82, length: 8) == [6, 5], "the bulk pair is not halted")
            try await session.clearHalt(0x83)
            #expect(try await session.transferIn(0x83, length: 8) == [7])
            #expect(device.inEndpointsAsked.filter { $0 == 0x83 }.count == 2, "a halted endpoint stalls without asking the accessory")
        }
    }

    @Test("A timeout falls due on the virtual clock; a cancelled call ends with .cancelled; the endpoint goes on")
    func timeoutAndCancel() async throws {
        let answering = Mutex(false)
        let device = Self.commandDevice { _ in answering.withLock { $0 } ? .data([3]) : .never }
        try await Self.withReader(device) { usb, _, session in
            let timed = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8, timeout: .seconds(2)) } }
            #expect(await usb.waitForSleepers(1))
            await usb.advance(by: .seconds(1))
            #expect(session.callsInFlight == 1, "nothing before the timeout")
            await usb.advance(by: .seconds(1))
            let timeout = await timed.value
            #expect(timeout?.code == .timeout)
            let waiting = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) } }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            waiting.cancel()
            #expect(await waiting.value?.code == .cancelled)
            answering.withLock { $0 = true }
            let third = try await session.transferIn(0x83, length: 8, timeout: .seconds(1))
            #expect(third == [3])
        }
    }

    @Test("selectAlternateSetting does SET_INTERFACE: endpoints then lists the new setting's; an unknown setting is .notFound")
    func alternateSetting() async throws {
        let device = Self.commandDevice { transfer in .data([transfer.endpoint]) }
        try await Self.withReader(device, alternates: [Self.setting1]) { usb, _, session in
            #expect(session.endpoints == Self.endpoints)
            try await session.selectAlternateSetting(1)
            #expect(session.alternateSetting == 1)
            #expect(session.endpoints == Self.setting1)
            #expect(try await session.transferIn(0x84, length: 64) == [0x84])
            let gone = await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) }
            #expect(gone?.code == .notFound && gone?.message.contains("alternate setting 1") == true, "\(String(describing: gone))")
            let unknown = await Self.error { () async throws(AccessoryError) in try await session.selectAlternateSetting(2) }
            #expect(unknown?.code == .notFound && unknown?.message.contains("2") == true)
            // With a call in flight, the switch is .busy and the call is not cut short.
            let waiting = Task { try await session.transferIn(0x82, length: 64) }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            let busy = await Self.error { () async throws(AccessoryError) in try await session.selectAlternateSetting(0) }
            #expect(busy?.code == .busy)
            try await session.transferOut(0x01, [1, 2])
            #expect(try await waiting.value == [2, 1])
            try await session.selectAlternateSetting(0)
            #expect(session.endpoints == Self.endpoints)
            #expect(try await session.transferIn(0x83, length: 8) == [0x83])
            // The stream still works after the switches.
            try await session.write([4, 5])
            try await session.flush()
            #expect(try await session.read(exactly: 2) == [5, 4])
        }
    }

    @Test("transferIn on the stream's IN endpoint is .busy while the stream reads; transferOut on its OUT while it writes")
    func busyRule() async throws {
        let holdOut = Mutex(false)
        let holder = Holder()  // weakly: the device's answer holds the holder
        let device = Device { transfer in
            switch transfer.endpoint {
            case 0x01 where holdOut.withLock({ $0 }): return .never
            case 0x01:
                holder.device?.queue(transfer.data, on: 0x82)
                return .accept
            default: return .queued
            }
        }
        holder.device = device
        try await Self.withReader(device) { usb, _, session in
            // No stream read yet: 0x82 is free for a call.
            try await session.transferOut(0x01, [1])
            #expect(try await session.transferIn(0x82, length: 64) == [1])
            // A stream read in flight makes a call on 0x82 .busy, not one on 0x83.
            let read = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.read(timeout: .seconds(1)) } }
            #expect(await usb.waitForSleepers(1))
            let busy = await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x82, length: 64) }
            #expect(busy?.code == .busy && busy?.message.contains("0x82") == true, "\(String(describing: busy))")
            let other = Task { try await session.transferIn(0x83, length: 8) }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            // Once the stream's read timed out and it stopped, 0x82 is free again.
            await usb.advance(by: .seconds(1))
            #expect(await read.value?.code == .timeout)
            try await session.transferOut(0x01, [2])
            #expect(try await session.transferIn(0x82, length: 64) == [2])
            other.cancel()
            _ = try? await other.value
            // Output queued on the stream's OUT endpoint makes transferOut on it .busy.
            holdOut.withLock { $0 = true }
            try await session.write([3])
            let busyOut = await Self.error { () async throws(AccessoryError) in try await session.transferOut(0x01, [4]) }
            #expect(busyOut?.code == .busy && busyOut?.message.contains("flush()") == true, "\(String(describing: busyOut))")
        }
    }

    @Test("A stream read beside a transferIn in flight on its endpoint is .busy, and the call still gets its data")
    func streamReadBesideACallIsBusy() async throws {
        let device = Self.commandDevice()
        try await Self.withReader(device) { usb, _, session in
            let call = Task { try await session.transferIn(0x82, length: 64) }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            let busy = await Self.error { () async throws(AccessoryError) in _ = try await session.read(timeout: .seconds(1)) }
            #expect(busy?.code == .busy && busy?.message.contains("0x82") == true, "\(String(describing: busy))")
            var input = session.input.makeAsyncIterator()
            let busyInput = await Self.error { () async throws(AccessoryError) in _ = try await input.next() }
            #expect(busyInput?.code == .busy, "\(String(describing: busyInput))")
            try await session.transferOut(0x01, [1, 2])
            #expect(try await call.value == [2, 1])
            // Once the call has ended, the stream may read.
            try await session.transferOut(0x01, [3, 4])
            #expect(try await session.read(exactly: 2) == [4, 3])
        }
    }

    @Test("A clearHalt that finds the device gone ends with the manager's verdict, not with its own evidence")
    func clearHaltFindingTheDeviceGoneTakesTheVerdict() async throws {
        let device = Self.commandDevice()
        let usb = SimulatedUSB()
        let plugged = await usb.plug(Self.accessory(device))
        try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(3600)), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let session = try await manager.openSession(to: accessory, protocol: Self.reader)
            // The manager already suspects the device, from an earlier operation: its verdict names that one.
            await manager.reportNoDevice(accessory.connectionID, operation: "bulk OUT 0x01")
            await usb.unplug(plugged, silently: true)
            let clear = Task { await Self.error { () async throws(AccessoryError) in try await session.clearHalt(0x83) } }
            for _ in 0..<1000 { await Task.yield() }
            await usb.advance(by: .seconds(2))
            let verdict = AccessoryError.Code.accessoryDisconnected(.ghostEvicted(.noDevice(operation: "bulk OUT 0x01")))
            let cleared = await clear.value
            #expect(cleared?.code == verdict, "\(String(describing: cleared))")
            let read = await Self.error { () async throws(AccessoryError) in _ = try await session.read() }
            #expect(read?.code == verdict, "\(String(describing: read))")
            await session.close()
        }
    }

    @Test("An open that fails is made once: the caller gets its error without a second open")
    func aFailedOpenIsNotRepeated() async throws {
        let usb = SimulatedUSB()
        let plugged = await usb.plug(Self.accessory(Self.commandDevice()))
        try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(3600)), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            await usb.removeDeviceNode(of: plugged)
            let before = usb.openAttempts
            let failed = await Self.error { () async throws(AccessoryError) in
                _ = try await manager.openSession(to: accessory, protocol: Self.reader)
            }
            #expect(failed?.code.disconnectReason != nil, "\(String(describing: failed))")
            #expect(usb.openAttempts - before == 1)
        }
    }

    @Test("An unplug in the middle of a transfer ends it with the reason the stream gets: .accessoryDisconnected(.unplugged)")
    func unplugMidTransfer() async throws {
        let device = Self.commandDevice { _ in .never }
        try await Self.withReader(device) { usb, plugged, session in
            let call = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) } }
            let read = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.read() } }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            await usb.advance(by: .zero)
            await usb.unplug(plugged)
            let callError = await call.value
            let readError = await read.value
            #expect(callError?.code == .accessoryDisconnected(.unplugged), "\(String(describing: callError))")
            #expect(callError?.code == readError?.code)
            let after = await Self.error { () async throws(AccessoryError) in try await session.transferOut(0x01, [1]) }
            #expect(after?.code == .accessoryDisconnected(.unplugged))
        }
    }

    @Test("A transfer that alone finds the device gone goes through the manager: a silent unplug becomes its ghost eviction")
    func transferFindsTheDeviceGone() async throws {
        let device = Self.commandDevice { _ in .never }
        let usb = SimulatedUSB()
        let plugged = await usb.plug(Self.accessory(device))
        try await withAccessoryManager(configuration: .init(reconcileInterval: .seconds(3600)), usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            var events = await manager.events(includingCurrent: false).makeAsyncIterator()
            let session = try await manager.openSession(to: accessory, protocol: Self.reader)
            let call = Task { await Self.error { () async throws(AccessoryError) in _ = try await session.transferIn(0x83, length: 8) } }
            #expect(await Self.eventually { session.callsInFlight == 1 })
            await usb.advance(by: .zero)
            // No hotplug event, no periodic reconcile due: only the transfer's NO_DEVICE tells.
            await usb.unplug(plugged, silently: true)
            await usb.advance(by: .seconds(2))
            guard case .disconnected(_, let reason)? = await events.next() else {
                Issue.record("no disconnect")
                return
            }
            #expect(reason.code == "ghost-evicted", "\(reason)")
            #expect(await call.value?.code == .accessoryDisconnected(reason))
            await session.close()
        }
    }

    @Test("The per-endpoint responder sees control requests too, and answers after a delay or with its own error")
    func responderSeam() async throws {
        let divergence = AccessoryError(.io, "transfer 7 on 0x01: expected 01 02, got 01 03")
        let device = Device { transfer in
            switch (transfer.kind, transfer.endpoint) {
            case (.control, 0x80): return .after(.milliseconds(500), .data([0x12, 0x34, 0x56]))
            case (.control, _): return .accept
            case (.bulk, 0x01): return transfer.data == [1, 2] ? .accept : .error(divergence)
            default: return .queued
            }
        }
        let usb = SimulatedUSB()
        await usb.plug(Self.accessory(device))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let answer = Task {
                try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 0x40, value: 1), length: 2)
            }
            #expect(await usb.waitForSleepers(1))
            await usb.advance(by: .milliseconds(500))
            #expect(try await answer.value == [0x12, 0x34], "cut to the length asked")
            let control = try #require(device.seen.withLock { $0.first { $0.kind == .control } })
            #expect(control.setup == ControlRequest(.vendor, request: 0x40, value: 1) && control.length == 2 && control.isIn)
            try await manager.withSession(to: accessory, protocol: Self.reader) { session in
                try await session.transferOut(0x01, [1, 2])
                let error = await Self.error { () async throws(AccessoryError) in try await session.transferOut(0x01, [1, 3]) }
                #expect(error == divergence)
            }
        }
    }

    @Test("A write responder on custom interfaces echoes on the interface's first IN endpoint")
    func writeResponderOnCustomInterfaces() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(
            vendor: 0x1209, product: 0x0043, serial: "FP2",
            interfaces: [SimulatedInterface(protocol: Self.reader, endpoints: Self.endpoints)]))
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: Self.reader) { session in
                try await session.write([1, 2, 3])
                #expect(try await session.read(exactly: 3) == [1, 2, 3])
                try await session.flush()
                try await session.transferOut(0x01, [4])
                #expect(try await session.read() == [4])
            }
        }
    }
}
