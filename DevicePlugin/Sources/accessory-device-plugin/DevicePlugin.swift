import AccessoryCore
import AccessoryKit
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KubeletDevicePluginAPI
import Logging

/// The running plugin: feeds the manager's events to the ``DeviceBoard``, serves the
/// `DevicePlugin` service on its socket, and keeps it registered with the kubelet.
struct DevicePlugin: Sendable {
    let manager: AccessoryManager
    let board: DeviceBoard
    let socketPath: String
    let registration: KubeletRegistration
    let logger: Logger
    /// How long a change waits for others before a list is sent: a ghost evicted and its
    /// accessory admitted again in one reconcile send no list at all.
    var settle: Duration = .milliseconds(100)
    /// How often the kubelet's socket and the plugin's own are checked.
    var pollInterval: Duration = .milliseconds(250)

    init(manager: AccessoryManager, protocols: Set<String>, socketPath: String, registration: KubeletRegistration, logger: Logger) {
        self.manager = manager
        self.board = DeviceBoard(protocols: protocols)
        self.socketPath = socketPath
        self.registration = registration
        self.logger = logger
    }

    /// Runs until cancelled; then ends every ListAndWatch stream, stops serving and removes
    /// its socket.
    func run() async throws {
        let (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // What is connected now goes into the list before the plugin serves or registers, so
        // the kubelet's first list is complete (no capacity 0, then N, at every start).
        let (current, events) = await Self.subscribe(manager)
        let reports = manager.recoveries()
        _ = board.apply(current.map { .connected($0) })
        let devices = board.publish() ?? []
        logger.info("devices: \(devices.count) healthy at the start")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events where board.apply(event) { changed.yield() }
            }
            group.addTask {
                for await _ in changes {
                    try? await Task.sleep(for: settle)
                    if let devices = board.publish() {
                        let healthy = devices.filter(\.isHealthy).count
                        logger.info("devices: \(healthy) healthy, \(devices.count - healthy) unhealthy")
                    }
                }
            }
            group.addTask {
                // A recovery's device is Unhealthy while its connection is gone (the events
                // say so); this says what the recovery did.
                for await report in reports {
                    let steps = report.skipped ?? report.steps.map { "\($0.step.name): \($0.outcome)" }.joined(separator: "; ")
                    logger.notice(
                        "recovery on port \(report.port) (\(report.trigger)): \(steps); \(report.recovered ? "recovered" : "not recovered")")
                }
                try? await Task.sleep(for: .seconds(86_400 * 365))  // its end (shutdown) is not the plugin's
            }
            group.addTask { try await serveAndRegister() }
            defer { changed.finish() }
            // Whichever ends first (cancellation, a failure to serve), the rest stop too.
            do {
                try await group.next()
                group.cancelAll()
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// The accessories connected now and every event after them, in one step on the
    /// manager: nothing is missed or repeated.
    private static func subscribe(_ manager: isolated AccessoryManager) -> ([Accessory], AsyncStream<AccessoryEvent>) {
        (manager.connectedAccessories, manager.events(includingCurrent: false))
    }

    struct CannotListen: Error, CustomStringConvertible {
        var description: String
    }

    /// Waits for the server to be bound; a bind that fails (something else at the path, the
    /// directory gone) is an error naming the path, and one that never answers fails after 5 s.
    private static func waitUntilListening(_ transport: HTTP2ServerTransport.Posix, path: String) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    _ = try await transport.listeningAddress
                } catch {
                    throw CannotListen(description: "cannot listen on \(path): \(error)")
                }
                return true
            }
            group.addTask {
                try await Task.sleep(for: .seconds(5))
                return false
            }
            let bound = try await group.next() ?? false
            group.cancelAll()
            guard bound else { throw CannotListen(description: "cannot listen on \(path) (is its directory there and writable?)") }
        }
    }

    /// Binds the socket; while another live instance serves on the path, waits for it to
    /// go. Nil when cancelled meanwhile.
    private func claimSocket() async throws -> PluginSocket? {
        var waiting = false
        while !Task.isCancelled {
            switch try PluginSocket.claim(socketPath) {
            case .bound(let socket):
                return socket
            case .taken:
                if !waiting {
                    logger.notice("another instance serves on \(socketPath); waiting for it to stop")
                    waiting = true
                }
                try? await Task.sleep(for: pollInterval)
            }
        }
        return nil
    }

    /// Serves on the socket, then registers; serves again when the socket is removed (a
    /// kubelet that restarts removes its plugins' sockets) and registers again when the
    /// kubelet's socket is recreated. It removes only the socket it made, never another
    /// instance's (a rolling update runs two for a while).
    private func serveAndRegister() async throws {
        defer { board.close() }
        while !Task.isCancelled {
            guard let socket = try await claimSocket() else { return }
            defer { socket.removeIfInPlace() }
            board.acceptWatchers()
            let transport = HTTP2ServerTransport.Posix(
                listeningSocketDescriptor: Int(socket.descriptor), transportSecurity: .plaintext)
            let server = GRPCServer(transport: transport, services: [DevicePluginService(board: board)])
            // Not a child task: a cancelled serve() traps in NIO ("Deinited NIOAsyncWriter
            // without calling finish()") when a connection it accepted is not yet handed
            // over, and a SIGTERM cancels this task. The server ends by a graceful shutdown,
            // which closes the listener first, so no connection is left half-accepted.
            let serving = Task { try await server.serve() }
            do {
                try await Self.waitUntilListening(transport, path: socketPath)
                logger.info("serving the DevicePlugin service on \(socketPath)")
                var registeredWith: FileIdentity?
                // After a refusal, the next try waits twice as long, up to 5 s.
                var retryAt = ContinuousClock.now
                var backoff = pollInterval
                var lastSeen: FileIdentity?
                while !Task.isCancelled {
                    // Its own socket first: a kubelet that restarts removes it before it
                    // makes its own, and a registration must not send it to a socket that
                    // is gone.
                    if !socket.isInPlace {
                        if FileIdentity(path: socketPath) == nil {
                            logger.notice("the plugin's socket \(socketPath) was removed; serving again")
                        } else {
                            logger.notice("the plugin's socket \(socketPath) was replaced by another; serving again when it goes")
                        }
                        break
                    }
                    let kubelet = registration.socketIdentity
                    if kubelet != lastSeen {
                        // A new kubelet socket: try at once, whatever the last one refused.
                        lastSeen = kubelet
                        retryAt = ContinuousClock.now
                        backoff = pollInterval
                    }
                    if let kubelet, kubelet != registeredWith, ContinuousClock.now >= retryAt {
                        do {
                            try await registration.register()
                            registeredWith = kubelet
                            backoff = pollInterval
                            logger.info("registered \(registration.request.resourceName) with the kubelet at \(registration.kubeletSocket) (endpoint \(registration.request.endpoint), API v1beta1)")
                        } catch {
                            logger.warning("cannot register with the kubelet at \(registration.kubeletSocket): \(error); trying again in \(backoff)")
                            retryAt = ContinuousClock.now + backoff
                            backoff = min(backoff * 2, .seconds(5))
                        }
                    } else if kubelet == nil, registeredWith != nil {
                        logger.notice("the kubelet's socket \(registration.kubeletSocket) is gone; waiting for it")
                        registeredWith = nil
                    }
                    try? await Task.sleep(for: pollInterval)
                }
            } catch {
                board.endWatchers()
                try? await Self.stop(server, serving)
                throw error
            }
            // ListAndWatch streams end with the server: the kubelet reconnects after
            // registering again.
            board.endWatchers()
            try await Self.stop(server, serving)
        }
    }

    /// Shuts `server` down gracefully and waits for `serving` to end: the RPCs in flight
    /// finish (ListAndWatch streams have been ended). One that does not finish within
    /// 5 s is cancelled then, when the listener is long closed.
    private static func stop(_ server: GRPCServer<HTTP2ServerTransport.Posix>, _ serving: Task<Void, any Error>) async throws {
        server.beginGracefulShutdown()
        let deadline = Task {
            try await Task.sleep(for: .seconds(5))
            serving.cancel()
        }
        defer { deadline.cancel() }
        do {
            try await serving.value
        } catch is CancellationError {
            // Cancelled by the deadline above.
        }
    }
}
