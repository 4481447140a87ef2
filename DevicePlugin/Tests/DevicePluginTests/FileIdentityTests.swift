import Foundation
import Testing
@testable import accessory_device_plugin

/// How the plugin tells which socket file is at a path, without a kubelet or a simulator.
@Suite("Which file is at a path")
struct FileIdentityTests {
    /// A unix socket bound at `path`, its descriptor closed (the file stays).
    private func makeSocket(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.enumerated() { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind \(path): \(String(cString: strerror(errno)))")
    }

    @Test("A chmod, chown or extended attribute keeps it; the socket made again changes it, on the same inode too", arguments: ["/tmp", "/dev/shm"])
    func survivesChmodNotRecreation(_ folder: String) throws {
        let directory = folder + "/file-identity-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/plugin.sock"
        try makeSocket(path)
        let first = try #require(FileIdentity(path: path))
        // The file systems the plugin lives on (ext4 and tmpfs here) report birth times.
        #expect(first.isBirthTime)
        var before = stat()
        stat(path, &before)
        #expect(chmod(path, 0o600) == 0)
        #expect(chown(path, getuid(), getgid()) == 0)
        var after = stat()
        stat(path, &after)
        // The change time moved (what made the plugin restart before), the identity did not.
        #expect(after.st_ctim.tv_sec != before.st_ctim.tv_sec || after.st_ctim.tv_nsec != before.st_ctim.tv_nsec)
        #expect(FileIdentity(path: path) == first)

        // Made again at once, again and again: ext4 gives the freed inode back.
        var previous = first
        var sameInode = 0
        for _ in 0..<20 {
            unlink(path)
            #expect(FileIdentity(path: path) == nil)
            try makeSocket(path)
            let next = try #require(FileIdentity(path: path))
            if next.inode == previous.inode && next.device == previous.device { sameInode += 1 }
            #expect(next != previous)
            previous = next
        }
        print("\(folder): \(sameInode) of 20 sockets made again got the inode back")
    }

    @Test("Nothing at the path: nil")
    func missing() {
        #expect(FileIdentity(path: "/tmp/file-identity-missing-" + UUID().uuidString) == nil)
    }
}
