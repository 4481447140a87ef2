import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KubeletDevicePluginAPI
import Synchronization

/// A stand-in for the kubelet's side of the device plugin API, written with the same
/// generated code: it serves `Registration` on `DIR/kubelet.sock` and records every
/// registration, and it calls the plugin's `DevicePlugin` service on its socket.
///
/// As a kubelet does, it dials the plugin's endpoint while handling `Register` (a dial that
/// fails refuses the registration, and is counted in ``dialFailures``), then follows
/// ListAndWatch, keeping the first list of each stream (``firstLists``).
final class FakeKubelet: Sendable {
    let directory: String
    var socketPath: String { directory + "/kubelet.sock" }
    private let registrations = Mutex<[V1beta1_RegisterRequest]>([])
    /// How many registrations to refuse before accepting, and how many were refused.
    private let refusals = Mutex<(left: Int, made: Int)>((0, 0))
    private let server = Mutex<(GRPCServer<HTTP2ServerTransport.Posix>, Task<Void, any Error>)?>(nil)
    private let dials = Mutex<(failures: Int, firstLists: [[String: String]], watches: [Task<Void, Never>])>((0, [], []))

    init(directory: String) {
        self.directory = directory
    }

    private struct RegistrationService: V1beta1_Registration.SimpleServiceProtocol {
        let kubelet: FakeKubelet
        func register(request: V1beta1_RegisterRequest, context: ServerContext) async throws -> V1beta1_Empty {
            let refuse = kubelet.refusals.withLock { r in
                guard r.left > 0 else { return false }
                r.left -= 1
                r.made += 1
                return true
            }
            if refuse { throw RPCError(code: .invalidArgument, message: "resource \(request.resourceName) is already registered") }
            do {
                _ = try await kubelet.withPlugin(endpoint: request.endpoint) { try await $0.getDevicePluginOptions(V1beta1_Empty()) }
            } catch {
                kubelet.dials.withLock { $0.failures += 1 }
                throw RPCError(code: .unknown, message: "failed to dial device plugin at \(request.endpoint): \(error)")
            }
            kubelet.registrations.withLock { $0.append(request) }
            kubelet.follow(endpoint: request.endpoint)
            return V1beta1_Empty()
        }
    }

    /// Follows the plugin's ListAndWatch, as a kubelet does after a registration; keeps the
    /// stream's first list.
    private func follow(endpoint: String) {
        let task = Task { [self] in
            _ = try? await withPlugin(endpoint: endpoint) { plugin in
                try await plugin.listAndWatch(V1beta1_Empty()) { response in
                    // Stays on the stream, as a kubelet does, until it ends or this stops.
                    var first = true
                    for try await list in response.messages where first {
                        first = false
                        let devices = Dictionary(list.devices.map { ($0.id, $0.health) }, uniquingKeysWith: { $1 })
                        self.dials.withLock { $0.firstLists.append(devices) }
                    }
                }
            }
        }
        dials.withLock { $0.watches.append(task) }
    }

    /// How many registrations failed because the plugin's endpoint could not be dialed.
    var dialFailures: Int { dials.withLock { $0.failures } }

    /// The first list of each ListAndWatch stream this kubelet opened, in order.
    var firstLists: [[String: String]] { dials.withLock { $0.firstLists } }

    /// Starts serving `Registration` (a new socket file, as a kubelet that starts makes).
    func start() async throws {
        unlink(socketPath)
        let transport = HTTP2ServerTransport.Posix(address: .unixDomainSocket(path: socketPath), transportSecurity: .plaintext)
        let server = GRPCServer(transport: transport, services: [RegistrationService(kubelet: self)])
        let task = Task { try await server.serve() }
        _ = try await transport.listeningAddress
        self.server.withLock { $0 = (server, task) }
    }

    /// Stops serving and removes the socket, as a kubelet that goes away does.
    func stop() async {
        guard let (server, task) = self.server.withLock({ s in defer { s = nil }; return s }) else { return }
        let watches = dials.withLock { d in defer { d.watches.removeAll() }; return d.watches }
        for watch in watches { watch.cancel() }
        server.beginGracefulShutdown()
        _ = try? await task.value
        unlink(socketPath)
    }

    var registrationsSoFar: [V1beta1_RegisterRequest] { registrations.withLock { $0 } }

    /// Refuses the next `count` registrations, as a kubelet does when the resource is taken.
    func refuseNext(_ count: Int) { refusals.withLock { $0.left = count } }

    var refusalsMade: Int { refusals.withLock { $0.made } }

    /// Waits until there are at least `count` registrations.
    func waitForRegistrations(_ count: Int, timeout: Duration) async throws -> [V1beta1_RegisterRequest] {
        try await Poll.until(timeout: timeout, "\(count) registration(s)") {
            let all = registrationsSoFar
            return all.count >= count ? all : nil
        }
    }

    /// Runs `body` with a client of the plugin's `DevicePlugin` service.
    func withPlugin<R: Sendable>(
        endpoint: String, _ body: (V1beta1_DevicePlugin.Client<HTTP2ClientTransport.Posix>) async throws -> R
    ) async throws -> R {
        let transport = try HTTP2ClientTransport.Posix(
            target: .unixDomainSocket(path: directory + "/" + endpoint), transportSecurity: .plaintext)
        return try await withGRPCClient(transport: transport) { client in
            try await body(V1beta1_DevicePlugin.Client(wrapping: client))
        }
    }
}

/// The lists a ListAndWatch stream has delivered, as the test reads them.
final class DeviceLists: Sendable {
    private let lists = Mutex<[[String: String]]>([])

    func append(_ response: V1beta1_ListAndWatchResponse) {
        let list = Dictionary(response.devices.map { ($0.id, $0.health) }, uniquingKeysWith: { $1 })
        lists.withLock { $0.append(list) }
    }

    var all: [[String: String]] { lists.withLock { $0 } }
    var latest: [String: String]? { all.last }

    /// Waits until the latest list satisfies `condition`; returns it.
    @discardableResult
    func wait(timeout: Duration, _ what: String, _ condition: @escaping @Sendable ([String: String]) -> Bool) async throws -> [String: String] {
        try await Poll.until(timeout: timeout, what) { [self] in latest.flatMap { condition($0) ? $0 : nil } }
    }
}

enum Poll {
    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    /// Calls `probe` every 20 ms until it returns a value, for at most `timeout`.
    static func until<T>(timeout: Duration, _ what: String, _ probe: () throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = try probe() { return value }
            guard ContinuousClock.now < deadline else { throw Timeout(description: "timed out after \(timeout) waiting for \(what)") }
            // The poll's interval (see above).
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
