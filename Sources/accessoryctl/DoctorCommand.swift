import AccessoryKit
import ArgumentParser
import FoundationEssentials

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check whether this user can use USB accessories here, with a fix for each problem.",
        discussion: """
            Checks the libusb version and hotplug support, usbfs, the permissions on each \
            accessory's device node, which udev rules apply, and kernel drivers that hold an \
            interface, and for each host controller the devices and endpoints behind it, with a \
            warning as an xHCI controller nears about 32 device slots or 96 endpoints (the limits \
            farms of phones and boards run into). Exit status 0 when accessories are usable by this user (warnings such as \
            "no udev rule" do not change that), 1 when something blocks use.

            Examples:
              accessoryctl doctor
              accessoryctl doctor || sudo accessoryctl doctor
            """)

    func run() throws {
        OutputStream.ignoreSigpipe()
        let root = ProcessInfo.processInfo.environment["ACCESSORYKIT_SYSFS_ROOT"] ?? SysfsScanner.defaultRoot
        let findings = Doctor(sysfsRoot: root).run()
        let out = OutputStream(fd: 1, lineBuffered: true)
        let style = TerminalStyle(fd: 1)
        for f in findings {
            let mark: String
            switch f.severity {
            case .ok: mark = style.green("ok     ")
            case .note: mark = style.dim("note   ")
            case .warning: mark = style.yellow("warning")
            case .problem: mark = style.red("problem")
            }
            out.writeLine("\(mark)  \(f.subject): \(f.message)")
            if let fix = f.fix, f.severity >= .warning { out.writeLine("         fix: \(fix)") }
        }
        let usable = Doctor.isUsable(findings)
        out.writeLine(usable ? style.bold("accessories are usable by this user") : style.bold("something blocks the use of accessories: see the problems above"))
        if !usable { throw ExitCode(1) }
    }
}
