import Foundation
import Testing

@Suite("accessoryctl help, completions and usage errors")
struct HelpCLITests {
    static let subcommands = ["list", "watch", "record", "replay", "import udevadm", "open", "doctor", "udev-rule", "control", "aoa"]

    @Test("Every subcommand's --help has examples", arguments: subcommands)
    func examples(subcommand: String) throws {
        let r = try CLI.run(CLI.accessoryctl, subcommand.split(separator: " ").map(String.init) + ["--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("Examples:"), "\(subcommand) --help has no examples")
        #expect(r.stdout.contains("accessoryctl \(subcommand.split(separator: " ")[0])"))
    }

    @Test("Shell completions are generated", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) throws {
        let r = try CLI.ctl("--generate-completion-script", shell)
        #expect(r.status == 0)
        #expect(r.stdout.contains("udev-rule"))
    }

    @Test("accessoryctl loads no ICU: it links neither Foundation nor its internationalization (40 MB of libraries to load at every start)")
    func loadsNoICU() throws {
        let r = try CLI.run("/usr/bin/ldd", [CLI.accessoryctl])
        #expect(r.status == 0 || r.stderr.contains("not a dynamic executable"), "\(r.stderr)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!r.stdout.contains(library), "accessoryctl links \(library)")
        }
    }

    @Test("Bad usage exits 64 with a message")
    func badUsage() throws {
        let r = try CLI.ctl("udev-rule", "--vendor", "xyz")
        #expect(r.status == 64)
        #expect(r.stderr.contains("4 hex digits"))
        let unknown = try CLI.ctl("frobnicate")
        #expect(unknown.status == 64)
    }

    @Test("Durations that are not finite, or absurdly long, are usage errors (exit 64), not traps", arguments: [
        ["watch", "--reconcile-interval", "nan"], ["watch", "--reconcile-interval", "inf"],
        ["watch", "--reconcile-interval", "1e300"], ["watch", "--reconcile-interval", "0"],
        ["record", "/dev/null", "--reconcile-interval=-1"],
        ["open", "1209:0001", "--protocol", "p", "--idle-timeout", "1e17"],
        ["open", "1209:0001", "--protocol", "p", "--idle-timeout", "nan"],
        ["control", "1209:0001", "--in", "--length", "2", "--type", "vendor", "--request", "1", "--timeout", "nan"],
        ["aoa", "18d1:4ee7", "--manufacturer", "M", "--model", "M", "--wait", "0"],
    ])
    func badDurations(arguments: [String]) throws {
        let r = try CLI.run(CLI.accessoryctl, arguments)
        #expect(r.status == 64, "\(arguments): \(r.stderr)")
        #expect(r.stderr.contains("seconds"), "\(r.stderr)")
    }

    @Test("control and aoa refuse bad arguments with usage errors that say why", arguments: [
        (["control", "1209:0001", "--type", "vendor", "--request", "1"], "exactly one of --in and --out"),
        (["control", "1209:0001", "--in", "--out", "--length", "1", "--type", "vendor", "--request", "1"], "exactly one of --in and --out"),
        (["control", "1209:0001", "--in", "--length", "70000", "--type", "vendor", "--request", "1"], "--length: control transfer of 70000 bytes exceeds Linux usbfs's limit of 4096"),
        (["control", "1209:0001", "--out", "--data", "0g", "--type", "vendor", "--request", "1"], "hexadecimal"),
        (["control", "1209:0001", "--out", "--data", "012", "--type", "vendor", "--request", "1"], "whole bytes"),
        (["control", "1209:0001", "--out", "--type", "vendor", "--request", "256"], "--request must be a number from 0 to 255"),
        (["control", "1209:0001", "--out", "--type", "sideways", "--request", "1"], "sideways"),
        (["aoa", "18d1:4ee7", "--manufacturer", String(repeating: "m", count: 300), "--model", "M"], "at most 255 bytes"),
        (["udev-rule", "--android-accessory", "--vendor", "1209"], "--android-accessory"),
    ])
    func controlUsage(arguments: [String], message: String) throws {
        let r = try CLI.run(CLI.accessoryctl, arguments)
        #expect(r.status == 64, "\(arguments): \(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test("Hexadecimal with a sign, or numbers with one, are usage errors (exit 64), not bytes", arguments: [
        (["--out", "--data", "+f"], "hexadecimal"), (["--out", "--data", "-1"], "hexadecimal"),
        (["--out", "--data", "0x+f"], "hexadecimal"), (["--out", "--data", "f+"], "hexadecimal"),
        (["--out", "--request", "+5"], "--request"), (["--out", "--request", "-0"], "--request"),
        (["--out", "--request", "0x+5"], "--request"), (["--out", "--request", "1", "--value", "0x"], "--value"),
        (["--out", "--request", "1", "--index", " 1"], "--index"),
    ])
    func signedHex(arguments: [String], message: String) throws {
        var all = ["control", "1209:0001", "--type", "vendor"] + arguments
        if !arguments.contains("--request") { all += ["--request", "1"] }
        let r = try CLI.run(CLI.accessoryctl, all)
        #expect(r.status == 64, "\(all): \(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test("udev-rule --android-accessory prints the accessory-mode rule")
    func androidRule() throws {
        let r = try CLI.run(CLI.accessoryctl, ["udev-rule", "--android-accessory"])
        #expect(r.status == 0)
        #expect(r.stdout.contains(#"ATTR{idVendor}=="18d1", ATTR{idProduct}=="2d0[0-5]""#), "\(r.stdout)")
    }

    @Test("udev-rule prints one narrow rule")
    func udevRule() throws {
        let r = try CLI.ctl("udev-rule", "--vendor", "1209", "--product", "0001", "--group", "plugdev")
        #expect(r.status == 0)
        #expect(r.stdout.contains(#"ATTR{idVendor}=="1209", ATTR{idProduct}=="0001", TAG+="uaccess", GROUP="plugdev", MODE="0660""#))
        #expect(!r.stdout.contains("0666"))
    }

    @Test("NO_COLOR and pipes get no escape codes")
    func noColor() throws {
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        let r = try CLI.run(CLI.accessoryctl, ["replay", CLI.packageRoot.appendingPathComponent("Tests/Fixtures/eight-hours-asleep.jsonl").path], environment: env)
        #expect(r.status == 0)
        #expect(!r.stdout.contains("\u{1B}["))
    }
}
