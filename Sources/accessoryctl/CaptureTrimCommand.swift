import AccessoryCapture
import ArgumentParser

extension CaptureCommand {
    struct Trim: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trim",
            abstract: "Keep one device's traffic of a capture, and its enumeration at address 0, in a new pcapng file.",
            discussion: """
                A whole-bus capture (Wireshark, tshark -i usbmonN, libfprint's) holds every \
                device's traffic: trim it before committing it as a fixture. The address-0 packets \
                kept are those of the enumeration that ends in the SET_ADDRESS giving the device its \
                address (read it from 'capture summary'). The output is pcapng, link type as the \
                input's, which Wireshark, tshark and 'capture summary' read. It says on stderr what \
                it dropped: the devices and the packets.

                Examples:
                  accessoryctl capture summary bus1.pcapng
                  accessoryctl capture trim bus1.pcapng --device 1:7 -o reader.pcapng
                """)

        @Argument(help: "The capture file (pcapng or pcap, link type 220 or 189).")
        var file: String

        @Option(help: ArgumentHelp("The device to keep, as 'capture summary' shows it.", valueName: "bus:address"))
        var device: String

        @Option(name: .short, help: ArgumentHelp("The pcapng file to write.", valueName: "out"))
        var output: String

        func validate() throws {
            _ = try parsedDevice()
        }

        func parsedDevice() throws -> (bus: Int, address: Int) {
            let parts = device.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let bus = Int(parts[0]), let address = Int(parts[1]), bus > 0, (1...127).contains(address) else {
                throw ValidationError("--device must be BUS:ADDRESS as 'capture summary' shows it, such as 1:7 (address 1–127); got '\(device)'")
            }
            return (bus, address)
        }

        func run() throws {
            let (bus, address) = try parsedDevice()
            let report: USBCaptureTrim.Report
            do {
                report = try USBCaptureTrim.trim(file, bus: bus, address: address, to: output)
            } catch {
                note("error: \(error)")
                throw ExitCode(1)
            }
            if let cut = report.truncation { note("warning: \(cut); dropped") }
            guard report.keptPackets > 0 else {
                note("error: \(file) has no packet of device \(bus):\(address); 'accessoryctl capture summary \(file)' lists its devices")
                throw ExitCode(1)
            }
            let devices = report.droppedDevices.isEmpty ? "no other device" : "devices " + report.droppedDevices.joined(separator: ", ")
            let enumeration = report.enumerationPackets > 0 ? " (\(report.enumerationPackets) of its enumeration at address 0)" : ""
            note("kept \(report.keptPackets) packets of \(bus):\(address)\(enumeration); dropped \(report.droppedPackets) packets: \(devices)")
        }
    }
}
