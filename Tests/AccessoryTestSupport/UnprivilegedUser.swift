import Foundation
import Testing

/// Runs a tool as another user (nobody, 65534) inside accessory-sim's testbed, for the
/// permission tests: the testbed's directories and umockdev's ioctl sockets are opened to
/// that user as /sys and /dev are on a machine, while a device node keeps the mode the test
/// gives it.
public struct UnprivilegedUser: Sendable {
    /// The setpriv arguments that run a command as nobody, without groups.
    public static let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups"]

    /// The testbed (`$UMOCKDEV_DIR`).
    public let testbed: String
    /// The copy of the tool the user can run, in the testbed.
    public let tool: String

    /// Opens the testbed to the user and copies `tool` where the user can run it.
    public init(tool original: String) throws {
        testbed = try #require(ProcessInfo.processInfo.environment["UMOCKDEV_DIR"], "UMOCKDEV_DIR is set under accessory-sim")
        let fm = FileManager.default
        try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: (testbed as NSString).deletingLastPathComponent)
        try fm.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: testbed)
        let ioctl = testbed + "/ioctl"
        for path in [ioctl] + (fm.subpaths(atPath: ioctl) ?? []).map({ ioctl + "/" + $0 }) {
            try fm.setAttributes([.posixPermissions: 0o777], ofItemAtPath: path)
        }
        tool = testbed + "/" + URL(fileURLWithPath: original).lastPathComponent
        if !fm.fileExists(atPath: tool) { try fm.copyItem(atPath: original, toPath: tool) }
    }

    /// The device node of `BUS:ADDRESS` in the testbed.
    public func node(_ device: String) -> String {
        let parts = device.split(separator: ":").compactMap { Int($0) }
        // Not BUS:ADDRESS: a node that is not there, so that the test fails instead of the run.
        guard parts.count == 2 else { return testbed + "/dev/bus/usb/not-bus-address-\(device)" }
        return testbed + String(format: "/dev/bus/usb/%03d/%03d", parts[0], parts[1])
    }

    /// Sets the mode of `BUS:ADDRESS`'s device node.
    public func setMode(_ mode: Int, of device: String) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: node(device))
    }

    /// `setpriv` and its arguments that run the tool with `arguments` as the user.
    public func command(_ arguments: [String]) -> [String] {
        Self.setpriv + [tool] + arguments
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test unless it runs as root with setpriv, which it needs to act as another user.
    public static var needsSetpriv: Self {
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv to act as another user")
    }
}
