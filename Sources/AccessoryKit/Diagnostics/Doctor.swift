import AccessoryCore
#if canImport(Glibc)
import Glibc
#endif

/// Checks whether this user can use USB accessories here, and says how to fix what blocks it.
public struct Doctor: Sendable {
    /// One finding.
    public struct Finding: Hashable, Sendable {
        /// How much a finding matters, from `ok` up to `problem`.
        public enum Severity: Int, Comparable, Sendable {
            /// All is well.
            case ok
            /// Worth knowing; nothing to fix.
            case note
            /// May cause trouble; does not block.
            case warning
            /// Blocks using accessories.
            case problem
            /// Orders by how much the finding matters.
            public static func < (a: Severity, b: Severity) -> Bool { a.rawValue < b.rawValue }
        }
        /// How much it matters.
        public var severity: Severity
        /// What was checked, such as `libusb` or a device.
        public var subject: String
        /// What was found, in words.
        public var message: String
        /// What to do about it, for warnings and problems.
        public var fix: String?
    }

    package var sysfsRoot: String
    package var deviceRoot: String
    package var rulesDirectories: [String]

    /// A doctor for this machine; the paths can point elsewhere, for tests.
    public init(
        sysfsRoot: String = "/sys/bus/usb/devices", deviceRoot: String = "/dev/bus/usb",
        rulesDirectories: [String] = ["/etc/udev/rules.d", "/run/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d"]
    ) {
        self.sysfsRoot = sysfsRoot
        self.deviceRoot = deviceRoot
        self.rulesDirectories = rulesDirectories
    }

    /// Runs every check.
    public func run() -> [Finding] {
        var findings: [Finding] = []
        if let error = LibUSBInfo.startError() {
            findings.append(Finding(severity: .problem, subject: "libusb", message: "libusb \(LibUSBInfo.version) cannot start: \(error)",
                                    fix: "install libusb-1.0-0 and check that /dev/bus/usb is present"))
        } else {
            findings.append(Finding(severity: .ok, subject: "libusb", message: "libusb \(LibUSBInfo.version), hotplug \(LibUSBInfo.hasHotplug ? "available" : "not available")"))
            if !LibUSBInfo.hasHotplug {
                findings.append(Finding(severity: .warning, subject: "hotplug", message: "libusb has no hotplug support here; changes are found by periodic reconciles only",
                                        fix: "use a libusb built with udev or netlink support"))
            }
        }
        let usbfs = SysfsFiles.exists(deviceRoot)
        findings.append(usbfs
            ? Finding(severity: .ok, subject: "usbfs", message: "\(deviceRoot) is present")
            : Finding(severity: .problem, subject: "usbfs", message: "\(deviceRoot) is missing: no USB device can be opened",
                      fix: "on a VM or container, pass the USB devices through (for example `--device /dev/bus/usb`); on a host, check that devtmpfs is mounted"))
        let scan = SysfsScanner(root: sysfsRoot).scan()
        if let note = scan.note {
            findings.append(Finding(severity: .note, subject: "sysfs", message: note))
        }
        if let failure = scan.failure {
            findings.append(Finding(severity: .problem, subject: "sysfs", message: failure,
                                    fix: "check the process's open-file limit (ulimit -n) and that it may read /sys"))
        }
        let rules = loadRules(into: &findings)
        if scan.devices.isEmpty {
            findings.append(Finding(severity: .note, subject: "accessories", message: "no USB accessories are connected"))
        }
        for info in scan.devices {
            findings += check(info, rules: rules)
        }
        findings += controllerFindings()
        return findings
    }

    /// One finding per host controller: what is behind it, and a warning as it nears the
    /// limits farms run into (``HostControllerLoad``).
    func controllerFindings() -> [Finding] {
        let all = SysfsScanner(root: sysfsRoot, includeHubs: true).scan()
        guard all.failure == nil else { return [] }
        return HostControllerLoad.measure(all.devices, sysfsRoot: sysfsRoot).map { load in
            let buses = load.buses.map(String.init).joined(separator: ", ")
            let subject = "host controller \(load.controller) (\(load.driver ?? "driver unknown"), bus\(load.buses.count == 1 ? "" : "es") \(buses))"
            let counts = "\(load.devices) device\(load.devices == 1 ? "" : "s"), \(load.endpoints) endpoint\(load.endpoints == 1 ? "" : "s")"
            let concerns = load.concerns
            guard !concerns.isEmpty else { return Finding(severity: .note, subject: subject, message: counts) }
            return Finding(
                severity: .warning, subject: subject, message: concerns.joined(separator: "; "),
                fix: "spread the accessories over more host controllers (ports of another controller, or a PCIe USB card); hubs do not add slots")
        }
    }

    /// Whether the findings leave accessories usable (warnings do not block).
    package static func isUsable(_ findings: [Finding]) -> Bool {
        !findings.contains { $0.severity == .problem }
    }

    private struct RuleFile {
        var path: String
        var rules: [UdevRulesParser.Rule]
    }

    private func loadRules(into findings: inout [Finding]) -> [RuleFile] {
        var files: [RuleFile] = []
        var seen = Set<String>()  // as udev does: /etc overrides /run overrides /usr/lib by file name
        for dir in rulesDirectories {
            for name in (SysfsFiles.list(dir) ?? []).sorted() where name.hasSuffix(".rules") && seen.insert(name).inserted {
                let path = dir + "/" + name
                guard let bytes = SysfsFiles.read(path, limit: 1 << 20, untilEndOfFile: true) else { continue }
                do {
                    files.append(RuleFile(path: path, rules: try UdevRulesParser().parse(String(decoding: bytes, as: UTF8.self))))
                } catch {
                    if name == UdevRule.fileName {
                        findings.append(Finding(severity: .warning, subject: path, message: "syntax error at \(error)",
                                                fix: "regenerate it with `accessoryctl udev-rule`"))
                    }
                }
            }
        }
        return files
    }

    private func check(_ info: USBDeviceInfo, rules: [RuleFile]) -> [Finding] {
        let d = info.descriptor
        let subject = "\(d.vendorProduct) \(d.name ?? "") on \(d.port)".replacingDoubleSpaces()
        var findings: [Finding] = []
        let hint = d.vendor.flatMap { try? UdevRule(vendor: $0, product: d.product).installHint }
        if let node = info.devicePath {
            if access(node, F_OK) != 0 {
                findings.append(Finding(severity: .problem, subject: subject, message: "its device node \(node) is missing",
                                        fix: "check that usbfs and devtmpfs are mounted"))
            } else if access(node, R_OK | W_OK) != 0 {
                findings.append(Finding(severity: .problem, subject: subject, message: "no permission to open \(node)",
                                        fix: hint.map { "install a udev rule: \($0)" }))
            } else {
                findings.append(Finding(severity: .ok, subject: subject, message: "\(node) can be opened"))
            }
        }
        let matching = rules.flatMap { file in
            file.rules.filter { $0.grantsAccess && $0.matches(vendor: d.vendor.map(Hex.four) ?? "", product: d.product.map(Hex.four) ?? "") }
                .map { "\(file.path):\($0.line)" }
        }
        if matching.isEmpty {
            findings.append(Finding(severity: .warning, subject: subject, message: "no udev rule grants access to it (fine as root)",
                                    fix: hint.map { "for use without root: \($0)" }))
        } else {
            findings.append(Finding(severity: .ok, subject: subject, message: "udev rules that apply: \(matching.joined(separator: ", "))"))
        }
        for interface in info.configuration?.interfaces ?? [] where interface.alternate == 0 {
            let path = "\(sysfsRoot)/\(d.port)/\(d.port):\(info.configuration?.value ?? 1).\(interface.number)/driver"
            if let driver = SysfsFiles.linkTarget(path) {
                findings.append(Finding(severity: .warning, subject: subject,
                                        message: "interface \(interface.number) is held by the kernel driver \(driver)",
                                        fix: "open it with `detachKernelDriver: true` (accessoryctl open --detach-kernel-driver)"))
            }
        }
        return findings
    }
}

extension String {
    fileprivate func replacingDoubleSpaces() -> String {
        split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}
