import Foundation
import Testing
@testable import accessory_device_plugin

/// The plugin's socket and the kubelet's, told apart by file identity, without a kubelet.
@Suite("The plugin's socket identity")
struct PluginSocketTests {
    private func temporaryDirectory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("plugin-socket-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test("A chmod of the plugin's socket or the kubelet's is no new socket: no restart, no new registration")
    func chmodKeepsTheIdentity() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/accessory.sock"
        guard case .bound(let socket) = try PluginSocket.claim(path) else {
            Issue.record("the socket at \(path) was taken")
            return
        }
        defer { close(socket.descriptor) }
        #expect(socket.isInPlace)
        // Later than the file's creation by more than the kernel's coarse clock step, so
        // that the chmod moves its change time.
        usleep(20_000)
        #expect(chmod(path, 0o600) == 0)
        #expect(socket.isInPlace, "a chmod changes the change time, not the socket")

        // The kubelet's socket: a chmod or an owner change says nothing of a restart.
        let registration = KubeletRegistration(kubeletDirectory: dir, endpoint: "accessory.sock", resource: "example.com/accessory")
        #expect(FileManager.default.createFile(atPath: registration.kubeletSocket, contents: nil))
        let before = try #require(registration.socketIdentity)
        usleep(20_000)
        #expect(chmod(registration.kubeletSocket, 0o640) == 0)
        #expect(chown(registration.kubeletSocket, getuid(), getgid()) == 0)
        #expect(registration.socketIdentity == before)

        // Removed: no longer in place.
        unlink(path)
        #expect(!socket.isInPlace)
    }
}
