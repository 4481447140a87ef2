import AccessoryTestSupport
import Foundation
import Testing

/// An accessory whose interfaces carry no string (accessory-sim's `noname`), as most real
/// devices': opened by interface number or through a rules file, and described. Nested in
/// the live suite, so it never runs alongside the other live commands.
extension LiveCLITests {
    @Suite("A device without interface strings", .simulatorLock)
    struct NoName {
        /// Writes `text` as a rules file in a fresh directory; returns the directory and the file.
        static func rules(_ text: String) throws -> (URL, String) {
            let dir = try CLI.temporaryDirectory()
            let file = dir.appendingPathComponent("rules.json")
            try Data(text.utf8).write(to: file)
            return (dir, file.path)
        }

        @Test("open --interface 0 echoes; --protocol alone says the device declares no protocol")
        func opensByInterface() throws {
            let device = try SimulatorControl.plug("1209:00d1:NONAME1:,noname").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let echoed = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--interface", "0", "--idle-timeout", "0.2"], stdin: Data("by number".utf8))
            #expect(echoed.status == 0 && echoed.stdout == "by number", "\(echoed.stderr)")
            let refused = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--protocol", "org.example.loopback"], stdin: Data("x".utf8))
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("does not speak org.example.loopback; it declares no protocol"), "\(refused.stderr)")
            let missing = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--interface", "3"], stdin: Data("x".utf8))
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("has no interface 3; it has 0"), "\(missing.stderr)")
            let both = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--interface", "0", "--protocol", "p"])
            #expect(both.status != 0 && both.stderr.contains("exactly one of --protocol NAME and --interface N"), "\(both.stderr)")
        }

        @Test("open --protocols FILE --protocol NAME echoes, through a rule with or without an interface")
        func opensThroughRules() throws {
            let device = try SimulatorControl.plug("1209:00d2:NONAME2:,noname").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let (dir, file) = try Self.rules("""
                [{"vendor": "1209", "product": "00d2", "interface": 0, "protocol": "com.example.reader"},
                 {"vendor": "1209", "protocol": "com.example.any"}]
                """)
            defer { try? FileManager.default.removeItem(at: dir) }
            for name in ["com.example.reader", "com.example.any"] {
                let echoed = try CLI.run(
                    OpenCLI.accessoryctl, ["open", device, "--protocols", file, "--protocol", name, "--idle-timeout", "0.2"],
                    stdin: Data(name.utf8))
                #expect(echoed.status == 0 && echoed.stdout == name, "\(name): \(echoed.stderr)")
            }
        }

        @Test("A malformed rules file is an error naming the file, the entry and the reason", arguments: [
            (#"[{"vendor": "1209", "protocol": "a"}, {"vendor": "12345", "protocol": "b"}]"#, "entry 1 (counting from 0): \"vendor\" must be 1 to 4 hexadecimal digits"),
            (#"[{"vendor": "1209", "interface": 256, "protocol": "a"}]"#, "entry 0 (counting from 0): \"interface\" must be an interface number, 0 to 255"),
            (#"[{"vendor": "1209"}]"#, "entry 0 (counting from 0): \"protocol\" must be a non-empty string"),
            (#"[{"vendor": "1209", "protocl": "a"}]"#, "entry 0 (counting from 0): unknown key \"protocl\""),
            (#"[7]"#, "entry 0 (counting from 0): not an object"),
            (#"{"vendor": "1209"}"#, "not a JSON array of rules"),
        ])
        func malformedRules(text: String, reason: String) throws {
            let device = try SimulatorControl.plug("1209:00d3:NONAME3:,noname").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let (dir, file) = try Self.rules(text)
            defer { try? FileManager.default.removeItem(at: dir) }
            let r = try CLI.run(OpenCLI.accessoryctl, ["open", device, "--protocols", file, "--interface", "0"], stdin: Data("x".utf8))
            #expect(r.status == 1)
            #expect(r.stderr.hasPrefix("error: protocol rules \(file)"), "\(r.stderr)")
            #expect(r.stderr.contains(reason), "\(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)")
        }

        @Test("control --interface N sends an interface request to interface N")
        func controlByInterface() throws {
            let device = try SimulatorControl.plug("1209:00d4:NONAME4:,noname").id
            defer { _ = try? SimulatorControl.ctl("unplug", device) }
            let status = try CLI.run(OpenCLI.accessoryctl, ["control", device, "--in", "--length", "2", "--type", "standard", "--interface", "0", "--request", "0"])
            #expect(status.status == 0 && status.stdout == "00 00\n", "\(status.stderr)")
            let clash = try CLI.run(OpenCLI.accessoryctl, ["control", device, "--in", "--length", "2", "--type", "standard", "--interface", "0", "--index", "1", "--request", "0"])
            #expect(clash.status != 0 && clash.stderr.contains("--interface N stands for"), "\(clash.stderr)")
        }
    }
}

extension LiveCLITests.NoName {
    @Test("describe --json lists the interface and its endpoints, without a string, speaking what the rules say")
    func describesTheDevice() throws {
        let device = try SimulatorControl.plug("1209:00d5:NONAME5:,noname,interface=2").id
        defer { _ = try? SimulatorControl.ctl("unplug", device) }
        let (dir, file) = try Self.rules(#"[{"vendor": "1209", "product": "00d5", "interface": 2, "protocol": "com.example.reader"}]"#)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(OpenCLI.accessoryctl, ["describe", device, "--json", "--protocols", file])
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(object["vendor"] as? String == "1209" && object["product"] as? String == "00d5")
        let configurations = try #require(object["configurations"] as? [[String: Any]])
        #expect(configurations.count == 1 && configurations[0]["active"] as? Bool == true)
        let interfaces = try #require(configurations[0]["interfaces"] as? [[String: Any]])
        try #require(interfaces.count == 1)
        #expect(interfaces[0]["number"] as? Int == 2 && interfaces[0]["class"] as? String == "ff")
        #expect(interfaces[0]["name"] == nil, "noname: no interface string")
        #expect(interfaces[0]["protocols"] as? [String] == ["com.example.reader"])
        let endpoints = try #require(interfaces[0]["endpoints"] as? [[String: Any]])
        #expect(endpoints.map { $0["address"] as? String } == ["0x01", "0x81"])
        #expect(endpoints.allSatisfy { $0["kind"] as? String == "bulk" && $0["maxPacketSize"] as? Int == 512 })
        #expect(endpoints.map { $0["direction"] as? String } == ["out", "in"])
        let text = try CLI.run(OpenCLI.accessoryctl, ["describe", device])
        #expect(text.status == 0 && text.stdout.contains("interface 2 alt 0: class ff/00/00, no string"), "\(text.stdout)")
        #expect(text.stdout.split(separator: "\n").count == 5, "short: \(text.stdout)")
    }
}
