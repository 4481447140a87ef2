import AccessoryFleet
import Testing
@testable import accessory_device_plugin

/// The plugin's shared state, without a kubelet or a simulator.
@Suite("The plugin's device board")
struct DeviceBoardTests {
    /// Whether `stream` ends within `timeout`.
    private func ends(_ stream: AsyncStream<[DeviceInventory.Device]>, within timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in stream {}
                return true
            }
            group.addTask {
                // The deadline itself: real time is what it measures.
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    @Test("A ListAndWatch that starts while the server stops ends at once, so the server's shutdown does not wait for it")
    func watchDuringShutdown() async {
        let board = DeviceBoard(protocols: [])
        let before = board.watch()
        board.endWatchers()
        #expect(await ends(before, within: .seconds(2)))
        // One that comes in after the watchers were ended, before the server stops accepting.
        let late = board.watch()
        #expect(await ends(late, within: .seconds(2)))
        #expect(board.watcherCount == 0)
    }
}
