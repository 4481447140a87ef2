import AccessoryCore
import AccessoryKit
import ArgumentParser

struct ControlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control",
        abstract: "Send one control request to an accessory.",
        discussion: """
            TARGET is VID:PID[:SERIAL] (hex) or a port chain, as for 'open'. A device-recipient \
            request needs no claimed interface; an interface- or endpoint-recipient request claims \
            its interface for the transfer (or fails with 'busy' when another process holds it).

            An IN transfer prints the bytes received as hexadecimal, space-separated, on one line \
            (an empty line when none came). An OUT transfer prints nothing. Numbers are decimal, \
            or hexadecimal with 0x. A refused request (STALL) exits 1 and says so. If the --capture \
            file cannot be written (a full disk), the request still completes; the file is cut back \
            to its last whole record and the command exits 74, naming the file and the error.

            Examples:
              accessoryctl control 18d1:4ee7 --in --length 2 --type vendor --recipient device --request 51
              accessoryctl control 1209:0001 --out --data "01 02 03" --type vendor --request 0x10 --value 1
              accessoryctl control 1209:0001 --in --length 2 --type standard --recipient interface --request 0 --index 0
              accessoryctl control 06cb:00bd --in --length 2 --type standard --interface 0 --request 0
            """)

    enum RequestKind: String, ExpressibleByArgument, CaseIterable {
        case standard, `class`, vendor
        var kind: ControlRequest.Kind {
            switch self {
            case .standard: .standard
            case .class: .class
            case .vendor: .vendor
            }
        }
    }

    enum RequestRecipient: String, ExpressibleByArgument, CaseIterable {
        case device, interface, endpoint, other
        var recipient: ControlRequest.Recipient { ControlRequest.Recipient.allCases.first { "\($0)" == rawValue }! }
    }

    @Argument(help: "The accessory: VID:PID[:SERIAL] (hex) or a port chain such as 1-1.4.")
    var target: String

    @Flag(name: .customLong("in"), help: "Device to host: read up to --length bytes.")
    var isIn = false

    @Flag(name: .customLong("out"), help: "Host to device: send --data (nothing by default).")
    var isOut = false

    @Option(help: "IN: how many bytes to ask for (0–4096, Linux usbfs's limit per control transfer).")
    var length: Int?

    @Option(help: "OUT: the bytes to send, in hexadecimal (\"01 02 ff\" or \"0102ff\"), at most 4096.")
    var data: String?

    @Option(name: .customLong("type"), help: "The request type: standard, class or vendor.")
    var kind: RequestKind

    @Option(help: "The recipient: device, interface, endpoint or other.")
    var recipient: RequestRecipient = .device

    @Option(help: "bRequest (0–255).")
    var request: String

    @Option(help: "wValue (0–65535).")
    var value: String = "0"

    @Option(help: "wIndex (0–65535): the interface number or endpoint address for those recipients.")
    var index: String = "0"

    @Option(name: .customLong("interface"), help: "An interface request to interface N (0–255): --recipient interface --index N.")
    var interfaceNumber: UInt8?

    @Option(help: "Seconds to wait for the device to answer.")
    var timeout: Double = 1

    @Option(help: ArgumentHelp(
        "Record every transfer as a Linux usbmon capture (pcapng) that Wireshark and tshark read.", valueName: "file"))
    var capture: String?

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        _ = try OpenCommand.parse(target)
        guard isIn != isOut else { throw ValidationError("give exactly one of --in and --out") }
        if isIn {
            guard let length else { throw ValidationError("--in needs --length N") }
            try Self.checkLength(length, option: "--length")
            guard data == nil else { throw ValidationError("--data goes with --out, not --in") }
        } else {
            guard length == nil else { throw ValidationError("--length goes with --in, not --out") }
            let bytes = try Self.hexBytes(data ?? "")
            try Self.checkLength(bytes.count, option: "--data")
        }
        if interfaceNumber != nil {
            guard recipient == .device || recipient == .interface, index == "0" else {
                throw ValidationError("--interface N stands for --recipient interface --index N; give one or the other")
            }
        }
        _ = try setup()
        try GlobalOptions.validateSeconds(timeout, option: "--timeout", allowsZero: false, atMost: 3600)
    }

    func setup() throws -> ControlRequest {
        let index = try interfaceNumber.map(UInt16.init) ?? UInt16(try Self.number(self.index, "--index", max: 65535))
        return ControlRequest(
            kind.kind, recipient: interfaceNumber == nil ? recipient.recipient : .interface,
            request: UInt8(try Self.number(request, "--request", max: 255)),
            value: UInt16(try Self.number(value, "--value", max: 65535)), index: index)
    }

    func run() async throws {
        global.bootstrapLogging()
        let target = try OpenCommand.parse(self.target)
        let setup = try setup()
        let limit = Duration.milliseconds(Int64((timeout * 1000).rounded()))
        let manager = try await global.startManager(capturePath: capture)
        let payload = try Self.hexBytes(data ?? "")
        do throws(AccessoryError) {
            let accessory = try await manager.accessory(matching: target)
            if isIn {
                let bytes = try await manager.controlTransfer(from: accessory, setup, length: length ?? 0, timeout: limit)
                let out = OutputStream(fd: 1, lineBuffered: true)
                out.writeLine(Self.hex(bytes))
            } else {
                try await manager.controlTransfer(to: accessory, setup, data: payload, timeout: limit)
            }
        } catch {
            note("error: \(error.message)")
            await manager.shutdown()
            _ = CaptureFailure.report(manager)
            throw ExitCode(1)
        }
        await manager.shutdown()
        if CaptureFailure.report(manager) != nil { throw CaptureFailure.exitCode }
    }

    /// A data length the host can carry in one control transfer (the library's own check,
    /// so the message is the one it gives), as bad usage.
    static func checkLength(_ length: Int, option: String) throws(ValidationError) {
        do {
            try ArgumentCheck.controlLength(length, operation: "control")
        } catch {
            throw ValidationError("\(option): \(error.message)")
        }
    }

    /// `02 00`: bytes as two-digit lowercase hexadecimal, space-separated.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0xf)]]) }.joined(separator: " ")
    }

    /// Parses `01 02 ff`, `0102ff` or `01:02:ff`.
    static func hexBytes(_ text: String) throws(ValidationError) -> [UInt8] {
        let digits = text.filter { !" :,\t".contains($0) }
        let stripped = digits.hasPrefix("0x") ? String(digits.dropFirst(2)) : digits
        guard stripped.count % 2 == 0 else { throw ValidationError("--data must be whole bytes in hexadecimal; got \"\(text)\"") }
        var bytes: [UInt8] = []
        var i = stripped.startIndex
        while i < stripped.endIndex {
            let j = stripped.index(i, offsetBy: 2)
            // Two hexadecimal digits exactly: `UInt8(_:radix:)` alone also takes a sign ("+f").
            guard stripped[i..<j].allSatisfy(\.isHexDigit), let b = UInt8(stripped[i..<j], radix: 16) else {
                throw ValidationError("--data must be hexadecimal bytes; \"\(stripped[i..<j])\" is not")
            }
            bytes.append(b)
            i = j
        }
        return bytes
    }

    /// A decimal or `0x` hexadecimal number in 0...max: digits only, no sign.
    static func number(_ text: String, _ option: String, max: Int) throws -> Int {
        let hex = text.lowercased().hasPrefix("0x")
        let digits = hex ? text.dropFirst(2) : text[...]
        let valid = !digits.isEmpty && digits.allSatisfy { hex ? $0.isHexDigit : ("0"..."9").contains($0) }
        let value = valid ? Int(digits, radix: hex ? 16 : 10) : nil
        guard let value, (0...max).contains(value) else {
            throw ValidationError("\(option) must be a number from 0 to \(max) (decimal, or hexadecimal with 0x); got \"\(text)\"")
        }
        return value
    }
}
