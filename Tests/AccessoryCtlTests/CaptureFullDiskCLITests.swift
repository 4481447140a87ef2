import AccessoryCapture
import AccessoryTestSupport
import AccessoryTraces
import Foundation
import Glibc
import Testing

/// `open --capture` and `control --capture` when the capture's file cannot grow: the session
/// or request finishes, the file reads to its end (tshark too), and the command exits 74
/// naming the file and the error. Nested in the live suite, so it never runs alongside the
/// other live commands.
extension LiveCLITests {
    @Suite("accessoryctl --capture on a full disk", .simulatorLock)
    struct CaptureFullDisk {
        /// Mounts a 512 KiB tmpfs on a new folder for `body`, and removes it after.
        static func withSmallDisk(_ body: (URL) throws -> Void) throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let mount = try CLI.run("/bin/mount", ["-t", "tmpfs", "-o", "size=512k", "tmpfs", dir.path])
            try #require(mount.status == 0, "\(mount.stderr)")
            defer { _ = try? CLI.run("/bin/umount", [dir.path]) }
            try body(dir)
        }

        /// The capture reads to its end, as the package and tshark read it.
        static func readsToItsEnd(_ path: String) throws {
            let capture = try USBCapture(path: path)
            #expect(capture.truncation == nil, "\(capture.truncation.map { "\($0)" } ?? "")")
            if Tshark.path != nil {
                let r = try CLI.run(Tshark.path!, ["-r", path])
                #expect(r.status == 0)
                #expect(!r.stderr.contains("cut short") && !r.stderr.contains("appears to be damaged"), "\(r.stderr)")
            }
        }

        @Test("open --capture with a 2 MiB echo on a 512 KiB disk: the echo is whole, the capture ends at a whole record, exit 74 naming it",
              .enabled(if: getuid() == 0, "needs root to mount a tmpfs"))
        func openOnAFullDisk() throws {
            try Self.withSmallDisk { disk in
                let work = try CLI.temporaryDirectory()
                defer { try? FileManager.default.removeItem(at: work) }
                let input = work.appendingPathComponent("in.bin")
                let output = work.appendingPathComponent("out.bin")
                let capture = disk.appendingPathComponent("echo.pcapng").path
                var rng = SplitMix64(seed: 2 << 20)
                let bytes = rng.bytes(2 << 20)
                try Data(bytes).write(to: input)
                let command = "'\(OpenCLI.accessoryctl)' open 1209:0001:SN1 --protocol org.example.loopback --idle-timeout 0.3 --capture '\(capture)' < '\(input.path)' > '\(output.path)'"
                let r = try CLI.run("/bin/sh", ["-c", command])
                #expect(r.status == 74, "\(r.stderr)")
                #expect((try? Data(contentsOf: output)) == Data(bytes), "the session is whole")
                #expect(r.stderr.contains(capture) && r.stderr.contains("No space left on device"), "\(r.stderr)")
                #expect(r.stderr.components(separatedBy: "error:").count == 2, "one error line: \(r.stderr)")
                try Self.readsToItsEnd(capture)
            }
        }

        @Test("control --capture whose file cannot grow: the request completes, the capture ends at a whole record, exit 74 naming it")
        func controlOverTheFileLimit() throws {
            let dir = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let capture = dir.appendingPathComponent("control.pcapng").path
            // A 512-byte file size limit (SIGXFSZ ignored, so the write fails with EFBIG):
            // the header fits, the descriptors recorded at the open do not.
            let command = "trap '' XFSZ; ulimit -f 1; exec '\(OpenCLI.accessoryctl)' control 1209:0001:SN1 --in --length 18 --type standard --recipient device --request 6 --value 0x0100 --capture '\(capture)'"
            let r = try CLI.run("/bin/sh", ["-c", command])
            #expect(r.status == 74, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("12 01 "), "the request completed: \(r.stdout)")
            #expect(r.stderr.contains(capture) && r.stderr.contains("File too large"), "\(r.stderr)")
            #expect((try? FileManager.default.attributesOfItem(atPath: capture)[.size] as? Int) ?? 0 <= 512)
            try Self.readsToItsEnd(capture)
        }
    }
}
