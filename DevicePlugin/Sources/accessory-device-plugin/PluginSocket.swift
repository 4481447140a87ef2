import Foundation

/// The plugin's listening socket at its path in the kubelet's directory, made so that one
/// instance never removes another's: it binds without removing what is at the path, leaves
/// a socket that someone answers on, and removes only the file it bound itself.
struct PluginSocket: Sendable {
    let path: String
    /// The listening descriptor, for the server transport (which takes it over).
    let descriptor: Int32
    /// The file it bound: its device, inode and birth time (an inode number alone can come
    /// back for another instance's socket; a `chmod` of it is not another socket).
    let file: FileIdentity

    enum Claim: Sendable {
        case bound(PluginSocket)
        /// Another live instance serves on the path.
        case taken
    }

    /// Binds and listens at `path`. A socket file there that nobody answers on (left by an
    /// instance that died) is removed first; one that someone answers on is `.taken`. Anything
    /// else at the path, or a directory that is missing or read-only, is an error naming it.
    static func claim(_ path: String) throws(DevicePlugin.CannotListen) -> Claim {
        for _ in 0..<3 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw .init(description: "cannot listen on \(path): socket: \(String(cString: strerror(errno)))") }
            var address = Self.address(path)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            let error = errno
            if bound == 0 {
                guard listen(fd, 128) == 0 else {
                    let error = errno
                    close(fd)
                    throw .init(description: "cannot listen on \(path): listen: \(String(cString: strerror(error)))")
                }
                guard let file = FileIdentity(path: path) else {
                    close(fd)  // removed at once by someone else: try again
                    continue
                }
                return .bound(PluginSocket(path: path, descriptor: fd, file: file))
            }
            close(fd)
            guard error == EADDRINUSE else { throw .init(description: "cannot listen on \(path): \(String(cString: strerror(error)))") }
            // Something is at the path.
            var st = stat()
            guard lstat(path, &st) == 0, let seen = FileIdentity(path: path) else { continue }  // gone meanwhile: try again
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw .init(description: "cannot listen on \(path): something that is not a socket is there (remove it)")
            }
            if answers(path) { return .taken }
            // Left by an instance that died: remove it, unless it was replaced meanwhile.
            if FileIdentity(path: path) == seen { unlink(path) }
        }
        return .taken  // others keep making sockets there
    }

    /// Whether the path still holds the socket this instance bound.
    var isInPlace: Bool { FileIdentity(path: path) == file }

    /// Removes the path if it still holds the socket this instance bound. (Another instance
    /// that replaced it within the instant between the check and the removal would lose its
    /// socket; it then serves again.)
    func removeIfInPlace() {
        if isInPlace { unlink(path) }
    }

    /// Whether something accepts connections on the socket at `path` (a full backlog counts).
    static func answers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return true }  // cannot tell: leave it alone
        defer { close(fd) }
        var address = Self.address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0 || errno == EAGAIN || errno == EINPROGRESS
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[i] = byte }
        }
        return address
    }
}
