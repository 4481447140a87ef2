import AccessoryCore
import AccessoryKit
import ArgumentParser

struct AOACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aoa",
        abstract: "Switch an Android phone into accessory mode (Android Open Accessory 2).",
        discussion: """
            Sends GET_PROTOCOL, the six identifying strings and START, then waits for the phone to \
            come back on the same port as 18d1:2d00–2d05. Prints the new connection and its link \
            to the phone's old one, and exits 0. Its interface 0 then speaks android.accessory.

            Examples:
              accessoryctl aoa 18d1:4ee7 --manufacturer Example --model Loopback --description "Example loopback" \\
                --version 1.0 --uri https://example.org --serial 0001
              echo hello | accessoryctl open 18d1:2d01 --protocol android.accessory

            Exits 1, saying why, when the device is not an AOA device (it refuses GET_PROTOCOL), \
            says protocol version 0, does not come back within --wait seconds, or cannot be opened \
            (the message names the udev rule that fixes it).
            """)

    @Argument(help: "The phone: VID:PID[:SERIAL] (hex) or a port chain such as 1-1.4.")
    var target: String

    @Option(help: "String 0: the manufacturer the phone's app declares.")
    var manufacturer: String
    @Option(help: "String 1: the model the phone's app declares.")
    var model: String
    @Option(help: "String 2: a description shown to the user.")
    var description: String = ""
    @Option(help: "String 3: the version the phone's app declares.")
    var version: String = "1.0"
    @Option(help: "String 4: a URI the phone opens when no app is installed.")
    var uri: String = ""
    @Option(help: "String 5: the accessory's serial number.")
    var serial: String = ""

    @Option(help: "Seconds to wait for the phone to come back in accessory mode.")
    var wait: Double = 10

    @OptionGroup var global: GlobalOptions

    var identity: AndroidAccessoryIdentity {
        AndroidAccessoryIdentity(manufacturer: manufacturer, model: model, description: description, version: version, uri: uri, serial: serial)
    }

    func validate() throws {
        _ = try OpenCommand.parse(target)
        try GlobalOptions.validateSeconds(wait, option: "--wait", allowsZero: false, atMost: 600)
        for (name, value) in zip(["--manufacturer", "--model", "--description", "--version", "--uri", "--serial"], identity.strings) {
            guard value.utf8.count < 256, !value.utf8.contains(0) else {
                throw ValidationError("\(name) must be at most 255 bytes of UTF-8 without NUL; got \(value.utf8.count) bytes")
            }
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        let target = try OpenCommand.parse(self.target)
        let manager = try await global.startManager()
        do throws(AccessoryError) {
            let phone = try await manager.accessory(matching: target)
            let switched = try await manager.switchToAccessoryMode(
                phone, identity: identity, wait: .milliseconds(Int64((wait * 1000).rounded())))
            let out = OutputStream(fd: 1, lineBuffered: true)
            let d = switched.descriptor
            let link = switched.previousConnectionID.map { "continues #\($0)" } ?? (switched == phone ? "already in accessory mode" : "no link")
            out.writeLine(
                "#\(switched.connectionID) \(d.vendorProduct) \(d.serial ?? "-") on \(d.port) (bus \(d.bus), address \(d.address.map(String.init) ?? "?")) \(link)")
        } catch {
            note("error: \(error.message)")
            await manager.shutdown()
            throw ExitCode(1)
        }
        await manager.shutdown()
    }
}
