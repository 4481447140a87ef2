import AccessoryCore
import AccessoryKit
import AccessoryMetrics
import ArgumentParser
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KubeletDevicePluginAPI
import Logging
import ProcessSignals

/// `accessory-device-plugin`: advertises the accessories that speak a protocol to a kubelet
/// as an extended resource, healthy while connected, by physical identity.
@main
struct DevicePluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessory-device-plugin",
        abstract: "Advertise USB accessories to a kubelet as an extended resource (device plugin API v1beta1).",
        discussion: """
            Serves the DevicePlugin service on DIR/ENDPOINT and registers it with the kubelet on \
            DIR/kubelet.sock. Each accessory that speaks one of the protocols is a device whose ID \
            is its physical identity (VID-PID-SERIAL; with the port too for every board of a serial \
            that several present boards share; its port without a serial); it is Healthy \
            while connected and Unhealthy once it leaves, whether unplugged or evicted as a ghost, \
            and Healthy again under the same ID when it returns. Allocate gives a container the \
            accessory's current /dev/bus/usb node and ACCESSORY_* environment variables.

            It registers again when the kubelet restarts (kubelet.sock recreated), serves again if \
            its own socket is removed, and on SIGTERM or SIGINT stops serving, removes its socket \
            and exits 0.

            With --recover it recovers accessories itself (AccessoryKit's RecoveryPolicy, as \
            `accessoryctl watch --recover`); --recover-vanished SECONDS power-cycles the port of an \
            accessory that left and stayed away that long. While an accessory recovers its device \
            is Unhealthy, under the same ID, and Healthy again when it is back; each recovery is \
            logged.

            With --metrics HOST:PORT it serves Prometheus metrics at http://HOST:PORT/metrics, as \
            `accessoryctl watch --metrics` does (port 0: a free port, which the log names).

            Example:
              accessory-device-plugin --resource example.org/loopback --protocol org.example.loopback
            """)

    @Option(help: "The extended resource to advertise, as DOMAIN/NAME (such as example.org/loopback).")
    var resource: String

    @Option(name: .customLong("protocol"), help: "A protocol an advertised accessory speaks (repeatable; none means every accessory).")
    var protocols: [String] = []

    @Option(help: "The kubelet's device plugin directory.")
    var kubeletDir = "/var/lib/kubelet/device-plugins"

    @Option(help: "The plugin's socket, a file name in the kubelet directory (default: from the resource).")
    var endpoint: String?

    @Option(help: "Seconds between the manager's periodic reconciles with sysfs (how soon a silent change is seen).")
    var reconcileInterval: Double = 1

    @Option(help: ArgumentHelp(
        "Serve Prometheus metrics at http://HOST:PORT/metrics (as accessoryctl watch --metrics).",
        valueName: "HOST:PORT"))
    var metrics: String?

    @Flag(help: "Recover accessories automatically (after 3 transfer timeouts in a row, up to a power cycle, at most 3 per port per hour).")
    var recover = false

    @Option(name: .customLong("recover-up-to"), help: ArgumentHelp("With --recover: the last step tried: reset, reauthorize or power-cycle.", valueName: "step"))
    var recoverUpTo: String?

    @Option(name: .customLong("recover-vanished"), help: ArgumentHelp(
        "With --recover: power-cycle the port of an accessory that left and stayed away this many seconds.", valueName: "seconds"))
    var recoverVanished: Double?

    @Flag(name: .shortAndLong, help: "Log more (twice for trace level).")
    var verbose: Int

    func validate() throws {
        let parts = resource.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[0].contains(".") else {
            throw ValidationError("--resource must be DOMAIN/NAME with a dotted domain, such as example.org/loopback; got '\(resource)'")
        }
        guard !socketName.contains("/"), socketName.hasSuffix(".sock"), socketName != "kubelet.sock" else {
            throw ValidationError("--endpoint must be a file name ending in .sock (not kubelet.sock); got '\(socketName)'")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: kubeletDir, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--kubelet-dir \(kubeletDir) is not a directory (is this a Kubernetes node, and is the directory mounted?)")
        }
        guard access(kubeletDir, W_OK) == 0 else {
            throw ValidationError("--kubelet-dir \(kubeletDir) is not writable: the plugin creates its socket there (run as root, or mount it read-write)")
        }
        // sockaddr_un's sun_path: 108 bytes with the terminating NUL.
        for path in [socketPath, (kubeletDir as NSString).appendingPathComponent("kubelet.sock")] where path.utf8.count > 107 {
            throw ValidationError("the socket path \(path) is \(path.utf8.count) bytes; a unix socket's path has at most 107: use a shorter --kubelet-dir")
        }
        guard reconcileInterval.isFinite, reconcileInterval > 0, reconcileInterval <= 3600 else {
            throw ValidationError("--reconcile-interval must be more than 0 and at most 3600 seconds")
        }
        do {
            _ = try RecoveryPolicy.fromOptions(recover: recover, upTo: recoverUpTo, vanishedSeconds: recoverVanished)
        } catch {
            throw ValidationError(error.description)
        }
        if let metrics {
            do {
                _ = try MetricsAddress(parsing: metrics)
            } catch {
                throw ValidationError("--metrics: \(error)")
            }
        }
    }

    /// The policy of --recover, or `nil`.
    var policy: RecoveryPolicy? {
        // validate() has refused every option this would throw for.
        try? RecoveryPolicy.fromOptions(recover: recover, upTo: recoverUpTo, vanishedSeconds: recoverVanished)
    }

    var socketPath: String { (kubeletDir as NSString).appendingPathComponent(socketName) }

    /// `accessory-example.org_loopback.sock` for `example.org/loopback`.
    var socketName: String {
        endpoint ?? "accessory-\(resource.replacingOccurrences(of: "/", with: "_")).sock"
    }

    func run() async throws {
        let level: Logger.Level = verbose >= 2 ? .trace : verbose == 1 ? .debug : .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "accessory-device-plugin")
        let signals = TerminationSignals.catchAll()
        let manager: AccessoryManager
        do {
            manager = try await AccessoryManager(configuration: .init(
                reconcileInterval: .milliseconds(Int64(reconcileInterval * 1000)),
                supportedProtocols: protocols.isEmpty ? nil : Set(protocols), recovery: policy))
        } catch {
            logger.error("cannot start the accessory manager: \(error)")
            throw ExitCode(1)
        }
        var metricsServer: MetricsServer?
        if let metrics, let address = try? MetricsAddress(parsing: metrics) {
            let recorder = AccessoryMetrics()
            Task { await recorder.observe(manager) }
            do {
                metricsServer = try recorder.serve(manager, at: address)
                logger.info("serving metrics at http://\(metricsServer?.address.description ?? "")/metrics")
            } catch {
                logger.error("\(error)")
                await manager.shutdown()
                throw error.isUsage ? ExitCode(64) : ExitCode(1)
            }
        }
        defer { metricsServer?.stop() }
        let plugin = DevicePlugin(
            manager: manager, protocols: Set(protocols),
            socketPath: socketPath,
            registration: KubeletRegistration(kubeletDirectory: kubeletDir, endpoint: socketName, resource: resource),
            logger: logger)
        // Until a signal, or until the plugin stops by itself (it cannot serve).
        enum Outcome: Sendable {
            case signal(Int32)
            case failed(String)
        }
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await signal in signals { return .signal(signal) }
                return .signal(0)
            }
            group.addTask {
                do {
                    try await plugin.run()
                    return .failed("the accessory manager stopped")
                } catch is CancellationError {
                    return .signal(0)
                } catch {
                    return .failed("\(error)")
                }
            }
            let first = await group.next() ?? .signal(0)
            group.cancelAll()  // the plugin's cleanup runs before the group returns
            return first
        }
        switch outcome {
        case .signal(let signal):
            logger.info("signal \(signal): stopped")
        case .failed(let reason):
            logger.error("\(reason)")
            await manager.shutdown()
            throw ExitCode(1)
        }
        await manager.shutdown()
    }
}
