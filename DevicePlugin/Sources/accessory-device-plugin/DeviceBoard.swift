import AccessoryCore
import AccessoryFleet
import Synchronization

/// The plugin's shared state: the ``DeviceInventory`` and the ListAndWatch streams that
/// follow it. The manager's events go in; a list goes out to every watcher when it differs
/// from the last one sent.
final class DeviceBoard: Sendable {
    private struct State {
        var inventory: DeviceInventory
        /// The list last sent to watchers.
        var published: [DeviceInventory.Device]
        var watchers: [Int: AsyncStream<[DeviceInventory.Device]>.Continuation] = [:]
        var nextWatcher = 0
        /// While set, a new watcher ends at once: the server is stopping.
        var refusing = false
        var closed = false
    }

    private let state: Mutex<State>

    init(protocols: Set<String>) {
        let inventory = DeviceInventory(protocols: protocols)
        state = Mutex(State(inventory: inventory, published: inventory.devices))
    }

    /// Applies one event; returns whether the list may have changed.
    func apply(_ event: AccessoryEvent) -> Bool {
        state.withLock { $0.inventory.apply(event) }
    }

    /// Applies several events at once (what is connected when the plugin starts).
    func apply(_ events: [AccessoryEvent]) -> Bool {
        state.withLock { $0.inventory.apply(events) }
    }

    /// Sends the current list to every watcher, if it differs from the last one sent.
    /// Returns the list when it was sent.
    @discardableResult
    func publish() -> [DeviceInventory.Device]? {
        state.withLock { state in
            let devices = state.inventory.devices
            guard devices != state.published, !state.closed else { return nil }
            state.published = devices
            for watcher in state.watchers.values { watcher.yield(devices) }
            return devices
        }
    }

    /// The list now, then every list published, until ``close()``.
    func watch() -> AsyncStream<[DeviceInventory.Device]> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: [DeviceInventory.Device].self, bufferingPolicy: .bufferingNewest(1))
        let id: Int? = state.withLock { state in
            guard !state.closed, !state.refusing else { return nil }
            continuation.yield(state.published)
            let id = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// How many ListAndWatch streams are open.
    var watcherCount: Int { state.withLock { $0.watchers.count } }

    func allocation(for id: String) throws(DeviceInventory.AllocationError) -> DeviceInventory.Allocation {
        let result = state.withLock { state in
            Result { () throws(DeviceInventory.AllocationError) in try state.inventory.allocation(for: id) }
        }
        return try result.get()
    }

    /// The IDs of the healthy devices.
    var healthyIDs: [String] {
        state.withLock { $0.published.filter(\.isHealthy).map(\.id) }
    }

    /// Ends the ListAndWatch streams open now, and those that start until
    /// ``acceptWatchers()``: a server that stops must not wait for them.
    func endWatchers() {
        let watchers = state.withLock { state in
            state.refusing = true
            defer { state.watchers.removeAll() }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }

    /// Lets ListAndWatch streams follow the list again (a new server).
    func acceptWatchers() {
        state.withLock { $0.refusing = false }
    }

    /// Ends every ListAndWatch stream; later ones end at once.
    func close() {
        let watchers = state.withLock { state in
            state.closed = true
            defer { state.watchers.removeAll() }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }
}
