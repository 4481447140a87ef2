import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Sends commands straight to accessory-sim's control socket (no `ctl` process in between,
/// so the benchmark's clock starts right before the simulator acts).
enum SimulatorControl {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static var isActive: Bool { ProcessInfo.processInfo.environment["ACCESSORY_SIM_SOCKET"] != nil }

    /// Sends one command line and returns the reply.
    static func send(_ command: String) throws -> String {
        guard let path = ProcessInfo.processInfo.environment["ACCESSORY_SIM_SOCKET"] else {
            throw Failure(description: "not under accessory-sim (ACCESSORY_SIM_SOCKET is not set)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect \(path): \(errno)") }
        let line = Array((command + "\n").utf8)
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        let text = String(decoding: ProcessRunner.readToEnd(fd), as: UTF8.self)
        guard text.hasPrefix("ok") || command.hasPrefix("list") else { throw Failure(description: "\(command): \(text)") }
        return text
    }

    /// `ok BUS ADDRESS PORT` → (bus, address).
    static func instance(_ reply: String) -> (bus: Int, address: Int)? {
        let w = reply.split(whereSeparator: \.isWhitespace)
        guard w.count >= 3, let bus = Int(w[1]), let address = Int(w[2]) else { return nil }
        return (bus, address)
    }
}
