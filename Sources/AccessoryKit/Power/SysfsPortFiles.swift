import AccessoryCore
import Glibc

/// Where sysfs keeps a hub's ports and a device's `authorized`, and writing them, with the
/// udev rule that grants a non-root user the write when it is refused.
package struct SysfsPortFiles: Sendable {
    /// The directory of device links, `/sys/bus/usb/devices`.
    let root: String

    /// The hub that a port chain hangs off, and the port's number on it:
    /// `1-1.4` is port 4 of hub `1-1`; `1-4` is port 4 of root hub `usb1`.
    package static func upstream(of port: String) -> (hub: String, number: Int)? {
        guard let dash = port.firstIndex(of: "-"), let bus = Int(port[..<dash]), bus > 0 else { return nil }
        if let dot = port.lastIndex(of: ".") {
            guard let n = Int(port[port.index(after: dot)...]), n > 0 else { return nil }
            return (String(port[..<dot]), n)
        }
        guard let n = Int(port[port.index(after: dash)...]), n > 0 else { return nil }
        return ("usb\(bus)", n)
    }

    /// The port chain of what plugs into hub `hub`'s port `n`.
    static func child(of hub: String, port n: Int) -> String {
        hub.hasPrefix("usb") ? "\(hub.dropFirst(3))-\(n)" : "\(hub).\(n)"
    }

    /// The hub's interface directory name (`1-1:1.0`; a root hub `usb1`'s is `1-0:1.0`).
    static func interface(of hub: String) -> String {
        hub.hasPrefix("usb") ? "\(hub.dropFirst(3))-0:1.0" : "\(hub):1.0"
    }

    /// The sysfs directory of hub `hub`'s port `n` (`…/1-1/1-1:1.0/1-1-port4`).
    func portDirectory(hub: String, port n: Int) -> String {
        "\(root)/\(hub)/\(Self.interface(of: hub))/\(hub)-port\(n)"
    }

    /// The port chain that a port's `peer` link names (`2-1.4`), if it has one.
    func peer(hub: String, port n: Int) -> String? {
        guard let target = SysfsFiles.linkTarget(portDirectory(hub: hub, port: n) + "/peer"),
              let range = target.ranges(of: "-port").last,
              let number = Int(target[range.upperBound...])
        else { return nil }
        return Self.child(of: String(target[..<range.lowerBound]), port: number)
    }

    /// The directory of a device by its port chain, through its parent's directory (the
    /// kernel nests it there), so that it is found while the device is deauthorized too.
    func deviceDirectory(_ port: String) -> String {
        guard let up = Self.upstream(of: port) else { return "\(root)/\(port)" }
        return "\(root)/\(up.hub)/\(port)"
    }

    /// Writes `value` to a sysfs attribute; a refusal says which udev rule grants it.
    func write(_ value: String, to path: String, rule: String) throws(AccessoryError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure(errno, path: path, rule: rule) }
        defer { close(fd) }
        let bytes = Array(value.utf8)
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count { throw Self.failure(n < 0 ? errno : EIO, path: path, rule: rule) }
    }

    private static func failure(_ code: Int32, path: String, rule: String) -> AccessoryError {
        if code == EACCES || code == EPERM {
            return AccessoryError(.accessDenied, "cannot write \(path): permission denied (it is root's by default; a udev rule grants it: \(rule))", operation: "write", rawValue: code)
        }
        if code == ENOENT { return AccessoryError(.notFound, "\(path) does not exist", operation: "write", rawValue: code) }
        return AccessoryError(.io, "cannot write \(path): \(String(cString: strerror(code)))", operation: "write", rawValue: code)
    }

    /// The udev rule that lets the `plugdev` group switch a hub's ports through `disable`
    /// (udev/70-accessorykit.rules carries it). No `ACTION`: the port files appear when the
    /// hub driver binds, after the interface's `add`.
    static let disableRule = #"SUBSYSTEM=="usb", DRIVER=="hub", RUN+="/bin/sh -c 'chgrp -f plugdev /sys%p/*-port*/disable; chmod -f g+w /sys%p/*-port*/disable; true'""#

    /// The udev rule that lets the `plugdev` group write a device's `authorized`
    /// (udev/70-accessorykit.rules carries it for every vendor).
    static func authorizedRule(vendor: UInt16?) -> String {
        let match = vendor.map { v in
            let hex = String(v, radix: 16)
            return #", ATTR{idVendor}==""# + String(repeating: "0", count: 4 - hex.count) + hex + #"""#
        } ?? ""
        return #"ACTION=="add", SUBSYSTEM=="usb", ENV{DEVTYPE}=="usb_device""# + match + #", RUN+="/bin/sh -c 'chgrp plugdev /sys%p/authorized; chmod g+w /sys%p/authorized'""#
    }
}
