import AccessoryCore
import AccessoryTestSupport
import Foundation
import Testing
@testable import AccessoryKit

/// Collects every notification of one subscription, for assertions on the full log.
actor EventLog {
    private(set) var events: [AccessoryEvent] = []
    private var task: Task<Void, Never>?

    /// Subscribes to `manager` and records until the stream ends.
    static func recording(_ manager: AccessoryManager, includingCurrent: Bool = true) async -> EventLog {
        let log = EventLog()
        let stream = await manager.events(includingCurrent: includingCurrent)
        await log.start(stream)
        return log
    }

    private func start(_ stream: AsyncStream<AccessoryEvent>) {
        task = Task { [weak self] in
            for await event in stream { await self?.append(event) }
        }
    }

    private func append(_ event: AccessoryEvent) { events.append(event) }

    /// Waits until the stream has finished (after the manager's shutdown).
    func finished() async { await task?.value }

    /// Lets the recording task catch up (yielding, never sleeping), then tells whether
    /// `predicate` holds: for managers whose events are already sent when the test's call
    /// returns (a host that drives time).
    func settled(_ predicate: ([AccessoryEvent]) -> Bool) async -> Bool {
        for _ in 0..<1000 {
            if predicate(events) { return true }
            await Task.yield()
        }
        return predicate(events)
    }

    /// Waits until `predicate` holds on the log, or `timeout` passes.
    /// - Returns: whether it held.
    @discardableResult
    func wait(timeout: Duration = .seconds(10), until predicate: ([AccessoryEvent]) -> Bool) async -> Bool {
        await waitUntil(timeout: timeout) { predicate(events) }
    }

    var connected: [Accessory] {
        events.compactMap { if case .connected(let a) = $0 { a } else { nil } }
    }

    var disconnected: [(Accessory, DisconnectReason)] {
        events.compactMap { if case .disconnected(let a, let r) = $0 { (a, r) } else { nil } }
    }
}

/// Checks the notification invariants on a full log: connection IDs strictly increase in
/// connect order; each ID has one `connected` before at most one `disconnected`; nothing
/// comes for an ID after its disconnect.
func checkInvariants(_ events: [AccessoryEvent], sourceLocation: SourceLocation = #_sourceLocation) {
    var lastConnected = ConnectionID.none
    var open: Set<ConnectionID> = []
    var closed: Set<ConnectionID> = []
    for (i, event) in events.enumerated() {
        let id = event.accessory.connectionID
        switch event {
        case .connected:
            #expect(id > lastConnected, "event \(i): ID \(id) connected after \(lastConnected)", sourceLocation: sourceLocation)
            #expect(!open.contains(id) && !closed.contains(id), "event \(i): ID \(id) connected twice", sourceLocation: sourceLocation)
            lastConnected = max(lastConnected, id)
            open.insert(id)
        case .disconnected:
            #expect(open.contains(id), "event \(i): ID \(id) disconnected without being connected", sourceLocation: sourceLocation)
            open.remove(id)
            closed.insert(id)
        }
    }
}
