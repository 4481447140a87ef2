import AccessoryCore
import Foundation
import Synchronization
import Testing
@testable import AccessoryKit
import AccessoryLocking

/// One-transfer calls over a scripted transfer primitive that completes in any order: no
/// simulator, no libusb.
struct EndpointCallsTests {
    static let bulkIn = AccessoryEndpoint(address: 0x82, kind: .bulk, maxPacketSize: 64)
    static let interruptIn = AccessoryEndpoint(address: 0x83, kind: .interrupt, maxPacketSize: 8)

    static func calls(_ transfers: ScriptedTransfers...) -> EndpointCalls {
        EndpointCalls(
            device: ScriptedConnection(transfers: transfers), interface: 0, alternate: 0,
            settings: [0: [bulkIn, interruptIn]], sessionDescription: "session 'test'")
    }

    /// A call running in a task, whose end the test can look at without waiting forever.
    final class Running: Sendable {
        private let result: Locked<EndpointCalls.CallResult?>
        let task: Task<Void, Never>

        init(_ body: @escaping @Sendable () async -> EndpointCalls.CallResult) {
            let result = Locked<EndpointCalls.CallResult?>(nil)
            self.result = result
            task = Task {
                let r = await body()
                result.withLock { $0 = r }
            }
        }

        var value: EndpointCalls.CallResult? { result.withLock { $0 } }

        /// The result, once the call has ended; `nil` when it has not after many turns.
        func ended() async -> EndpointCalls.CallResult? {
            for _ in 0..<2000 {
                if let value { return value }
                await Task.yield()
            }
            for _ in 0..<200 {
                if let value { return value }
                // A bounded poll (200 × 5 ms at most) once yielding has not sufficed.
                try? await Task.sleep(for: .milliseconds(5))
            }
            return value
        }
    }

    /// Yields until `condition` holds; `false` when it never does.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2000 {
            if condition() { return true }
            await Task.yield()
        }
        for _ in 0..<200 {
            if condition() { return true }
            // A bounded poll (200 × 5 ms at most) once yielding has not sufficed.
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    static let verdict = AccessoryError(.accessoryDisconnected(.unplugged), "accessory 1209:0001 SN1 disconnected: unplugged")

    @Test("A call held behind an older one that found the device gone ends once the verdict ends the older one")
    func aHeldCallIsReleasedWhenTheCallBeforeItEnds() async {
        let transfers = ScriptedTransfers(endpoint: 0x82)
        let calls = Self.calls(transfers)
        let gone = Locked<[DeviceGoneSign]>([])
        calls.setDeviceGoneHandler { sign in gone.withLock { $0.append(sign) } }
        let a = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { transfers.history.count == 1 })
        let b = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { transfers.history.count == 2 })
        let (tagA, tagB) = (transfers.history[0].tag, transfers.history[1].tag)
        // B's data comes first: it waits for A, so that calls end in order.
        transfers.complete(tagB, data: [2])
        #expect(b.value == nil)
        // A finds the device gone: the session is told; both wait for the verdict.
        transfers.complete(tagA, .noDevice)
        #expect(gone.withLock { $0.count } == 1)
        calls.fail(Self.verdict)
        let endA = await a.ended()
        let endB = await b.ended()
        #expect(endA == .failure(Self.verdict))
        #expect(endB == .success([2]), "B got its data before the verdict; it ends once A has")
        await calls.close()
    }

    @Test("Calls on one endpoint reach the device in the order they were made, even when a later one is started while an earlier one is being submitted")
    func callsAreSubmittedInCallOrder() async {
        let transfers = ScriptedTransfers(endpoint: 0x82)
        let calls = Self.calls(transfers)
        let started = Locked(false)
        let bBox = Locked<Running?>(nil)
        // Inside A's submit, B is made and given time to submit before A is recorded.
        transfers.duringNextSubmit {
            let b = Running { await calls.transfer(Self.bulkIn, bytes: [2], length: 1, timeout: nil) }
            bBox.withLock { $0 = b }
            started.withLock { $0 = true }
            let deadline = ContinuousClock.now + .milliseconds(500)
            // A poll with a deadline: B is queued once two calls are in flight.
            while calls.inFlight < 2, ContinuousClock.now < deadline { usleep(1000) }
            // Time on purpose: what is tested is that B, queued and given time, is still not
            // submitted before A. Nothing can be awaited for a submit that must not happen.
            usleep(50_000)
        }
        let a = Running { await calls.transfer(Self.bulkIn, bytes: [1], length: 1, timeout: nil) }
        #expect(await Self.eventually { transfers.history.count == 2 })
        #expect(transfers.history.map(\.bytes) == [[1], [2]])
        for s in transfers.history { transfers.complete(s.tag) }
        #expect(await a.ended() == .success([]))
        #expect(await bBox.withLock({ $0 })?.ended() == .success([]))
        await calls.close()
    }

    @Test("A call cancelled while it waits behind another's submit ends .cancelled and is never submitted")
    func aQueuedCallCancelledBeforeItsSubmitEndsCancelled() async {
        let transfers = ScriptedTransfers(endpoint: 0x82)
        let calls = Self.calls(transfers)
        let bBox = Locked<Running?>(nil)
        // Inside A's submit, B is made and cancelled before A's submit returns.
        transfers.duringNextSubmit {
            let b = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
            bBox.withLock { $0 = b }
            let deadline = ContinuousClock.now + .milliseconds(500)
            // A poll with a deadline: B is queued once two calls are in flight.
            while calls.inFlight < 2, ContinuousClock.now < deadline { usleep(1000) }
            b.task.cancel()
            // Time on purpose: B's cancellation lands while A's submit still holds the
            // submitter, which is the case under test; it must not submit B then either.
            usleep(20_000)
        }
        let a = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { bBox.withLock { $0 }?.value != nil })
        guard case .failure(let error)? = bBox.withLock({ $0 })?.value else {
            Issue.record("the cancelled call did not end")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
        #expect(transfers.history.count == 1, "only A was submitted")
        transfers.complete(transfers.history[0].tag, data: [1])
        #expect(await a.ended() == .success([1]))
        await calls.close()
    }

    @Test("A failure that comes while a call's transfer is being submitted cancels that transfer once it is submitted, and a close then returns")
    func aFailureDuringASubmitCancelsTheTransferItMissed() async {
        let transfers = ScriptedTransfers(endpoint: 0x82)
        let calls = Self.calls(transfers)
        // Inside the submit, before the transfer is pending: the failure (the manager's
        // verdict, on this thread, at once) ends the call and cancels every transfer pending
        // now, which does not yet include this one. A close does the same, on its own thread.
        transfers.duringNextSubmit { calls.fail(Self.verdict) }
        let a = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { transfers.history.count == 1 })
        #expect(await Self.eventually { transfers.pending.first?.cancelled == true }, "the transfer submitted after the failure is cancelled")
        transfers.completeCancelled()
        guard case .failure(let error)? = await a.ended() else {
            Issue.record("the call did not end: \(String(describing: a.value))")
            return
        }
        #expect(error == Self.verdict, "\(error)")
        let closed = Running {
            await calls.close()
            return .success([])
        }
        #expect(await closed.ended() == .success([]), "close returned: nothing is left in flight")
    }

    @Test("While a halt is being cleared on an endpoint, a call on it is .busy; other endpoints go on")
    func clearingAHaltHoldsCallsOff() async {
        let bulk = ScriptedTransfers(endpoint: 0x82), interrupt = ScriptedTransfers(endpoint: 0x83)
        let calls = Self.calls(bulk, interrupt)
        #expect(calls.beginClearingHalt(0x82) == nil)
        let busy = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        guard case .failure(let error)? = await busy.ended() else {
            Issue.record("a call during the clear went through")
            return
        }
        #expect(error.code == .busy && error.message.contains("0x82"), "\(error)")
        let other = Running { await calls.transfer(Self.interruptIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { interrupt.history.count == 1 })
        // A second clear on the same endpoint is .busy too; so is one on an endpoint with a call in flight.
        #expect(calls.beginClearingHalt(0x82)?.code == .busy)
        #expect(calls.beginClearingHalt(0x83)?.code == .busy)
        calls.endClearingHalt(0x82)
        let after = Running { await calls.transfer(Self.bulkIn, bytes: nil, length: 8, timeout: nil) }
        #expect(await Self.eventually { bulk.history.count == 1 })
        bulk.complete(bulk.history[0].tag, data: [7])
        interrupt.complete(interrupt.history[0].tag, data: [8])
        #expect(await after.ended() == .success([7]))
        #expect(await other.ended() == .success([8]))
        await calls.close()
    }
}
