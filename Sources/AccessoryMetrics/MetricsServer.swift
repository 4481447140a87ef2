import AccessoryKit
import AccessoryLocking
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server for `/metrics` on a POSIX socket: `GET /metrics` gets the body
/// the server was given, with the exposition format's content type; any other path 404.
///
/// It needs no event loop: a thread of its own accepts, and each connection gets a thread
/// that reads the request head, answers and closes. A client that sends nothing, or stops
/// reading, costs its thread at most ``timeout`` twice; past ``connectionLimit`` connections
/// at once, a new one is answered 503 at once. Nothing of this runs on Swift's cooperative
/// pool, so a stuck scraper never holds up the manager or the program's output.
public final class MetricsServer: Sendable {
    /// The address it listens on, with the port the kernel picked for port 0.
    public let address: MetricsAddress
    /// The port it listens on.
    public var port: UInt16 { address.port }
    /// How long a connection may take to send its request head, and to take the response.
    public static let timeout: Duration = .seconds(5)
    /// How many connections are served at once.
    public static let connectionLimit = 32

    private let listener: Int32
    private let body: @Sendable () async -> [UInt8]
    private let state = Locked(State())

    private struct State {
        var connections = 0
        var stopped = false
    }

    /// Binds and listens on `address` (so a port in use fails here), then serves in the
    /// background until ``stop()``.
    /// - Parameters:
    ///   - address: where to listen (port 0: a free port, which ``address`` then names).
    ///   - body: the exposition, made for each scrape.
    /// - Throws: ``MetricsServerError`` when the host does not resolve or the socket cannot
    ///   be bound (a port in use says so).
    public init(address: MetricsAddress, body: @escaping @Sendable () async -> [UInt8]) throws(MetricsServerError) {
        let (fd, bound) = try Self.listen(on: address)
        self.listener = fd
        self.address = bound
        self.body = body
        let server = self
        DetachedThread.start { server.acceptLoop() }
    }

    /// Stops accepting and closes the listening socket. Connections being answered finish.
    /// Idempotent.
    public func stop() {
        let first = state.withLock { s in
            defer { s.stopped = true }
            return !s.stopped
        }
        // shutdown(2) wakes the thread blocked in accept(2), which then closes the socket.
        if first { _ = shutdown(listener, Int32(SHUT_RDWR)) }
    }

    deinit { stop() }

    // MARK: Serving

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    if state.withLock({ $0.stopped }) { break }
                    if errno != EINTR && errno != ECONNABORTED { usleep(10_000) }
                    continue
                }
                break
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)  // not inherited by a program the process starts
            let admitted = state.withLock { s in
                guard s.connections < Self.connectionLimit else { return false }
                s.connections += 1
                return true
            }
            Self.setTimeouts(client)
            guard admitted else {
                Self.send(client, MetricsHTTP.response(status: 503, "Service Unavailable"))
                close(client)
                continue
            }
            DetachedThread.start { [self] in
                serve(client)
                close(client)
                state.withLock { $0.connections -= 1 }
            }
        }
        close(listener)
    }

    /// Reads one request head from `client` and answers it.
    private func serve(_ client: Int32) {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !MetricsHTTP.headIsComplete(head) {
            guard head.count < MetricsHTTP.headLimit else {
                Self.send(client, MetricsHTTP.response(status: 431, "Request Header Fields Too Large"))
                return
            }
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }  // closed, or silent past the timeout
            head += chunk[..<n]
        }
        switch MetricsHTTP.route(head) {
        case .metrics, .metricsHead:
            guard let exposition = Self.wait(for: body, timeout: Self.timeout) else {
                Self.send(client, MetricsHTTP.response(status: 503, "Service Unavailable"))
                return
            }
            Self.send(client, MetricsHTTP.response(
                code: 200, reason: "OK", contentType: MetricsHTTP.contentType, body: exposition,
                headOnly: MetricsHTTP.route(head) == .metricsHead))
        case .status(let code, let reason):
            Self.send(client, MetricsHTTP.response(status: code, reason))
        }
    }

    /// Runs `body` in a task and waits for it on this (non-pool) thread, up to `timeout`.
    private static func wait(for body: @escaping @Sendable () async -> [UInt8], timeout: Duration) -> [UInt8]? {
        let result = Locked<[UInt8]?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let bytes = await body()
            result.withLock { $0 = bytes }
            done.signal()
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return result.withLock { $0 }
    }

    /// Writes all of `bytes`, or as much as the client takes before the send timeout.
    private static func send(_ client: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            sent += n
        }
    }

    /// Receive and send timeouts of ``timeout`` on `fd`.
    private static func setTimeouts(_ fd: Int32) {
        let (seconds, _) = timeout.components
        var tv = timeval(tv_sec: Int(seconds), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: Binding

    /// A listening socket on the first address `address.host` resolves to, and the address
    /// with the port bound.
    private static func listen(on address: MetricsAddress) throws(MetricsServerError) -> (Int32, MetricsAddress) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard status == 0, let first = list else {
            throw MetricsServerError(address: address, problem: "the host does not resolve (\(String(cString: gai_strerror(status))))", isUsage: true)
        }
        defer { freeaddrinfo(list) }
        let info = first.pointee
        let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.ai_protocol)
        guard fd >= 0 else { throw MetricsServerError(address: address, errno: errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.ai_addr, info.ai_addrlen) == 0, Glibc.listen(fd, 64) == 0 else {
            let error = MetricsServerError(address: address, errno: errno)
            close(fd)
            throw error
        }
        var bound = address
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        bound.port = withUnsafeBytes(of: &storage) { raw in
            // sin_port and sin6_port sit at the same offset, in network order.
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
        return (fd, bound)
    }
}

/// Why ``MetricsServer`` could not listen.
public struct MetricsServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The address asked for.
    public var address: MetricsAddress
    /// What went wrong, in words (`the port is in use`).
    public var problem: String
    /// Whether the address itself is at fault (a host that does not resolve): a usage error.
    public var isUsage: Bool

    init(address: MetricsAddress, problem: String, isUsage: Bool = false) {
        self.address = address
        self.problem = problem
        self.isUsage = isUsage
    }

    init(address: MetricsAddress, errno code: Int32) {
        let text = String(cString: strerror(code))
        switch code {
        case EADDRINUSE: self.init(address: address, problem: "the port is in use (\(text))")
        case EACCES: self.init(address: address, problem: "permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE (\(text))")
        case EADDRNOTAVAIL: self.init(address: address, problem: "the host is not an address of this machine (\(text))", isUsage: true)
        default: self.init(address: address, problem: text)
        }
    }

    public var description: String { "cannot serve metrics on \(address): \(problem)" }
}
