import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KubeletDevicePluginAPI

/// Registers the plugin with the kubelet, on `DIR/kubelet.sock`, and tells when that
/// socket was recreated (a kubelet restart), which calls for registering again.
struct KubeletRegistration: Sendable {
    let kubeletSocket: String
    let request: V1beta1_RegisterRequest

    init(kubeletDirectory: String, endpoint: String, resource: String) {
        kubeletSocket = (kubeletDirectory as NSString).appendingPathComponent("kubelet.sock")
        request = .with {
            $0.version = "v1beta1"
            $0.endpoint = endpoint
            $0.resourceName = resource
            $0.options = DevicePluginService.options
        }
    }

    /// Calls `Registration.Register` once, giving up after `timeout`.
    func register(timeout: Duration = .seconds(5)) async throws {
        let request = self.request
        let transport = try HTTP2ClientTransport.Posix(
            target: .unixDomainSocket(path: kubeletSocket), transportSecurity: .plaintext)
        try await withGRPCClient(transport: transport) { client in
            let registration = V1beta1_Registration.Client(wrapping: client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { _ = try await registration.register(request) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw RPCError(code: .deadlineExceeded, message: "the kubelet did not answer within \(timeout)")
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// The identity of the kubelet's socket file now, or nil when there is none: a new value
    /// means the kubelet restarted (a `chmod` or relabel of the socket is not one).
    var socketIdentity: FileIdentity? { FileIdentity(path: kubeletSocket) }
}
