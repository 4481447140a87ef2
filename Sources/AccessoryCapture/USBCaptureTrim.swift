#if canImport(Glibc)
import Glibc
#endif

/// Keeps one device's traffic of a usbmon capture, and its enumeration at address 0 when the
/// capture holds it, in a new pcapng file (what `accessoryctl capture trim` writes): a
/// whole-bus capture, trimmed, can be committed as a fixture without another device's data.
///
/// The address-0 packets kept are those of the enumeration that ends in the successful
/// SET_ADDRESS giving the device its address; other enumerations at address 0 are dropped. Packets of
/// other link types are dropped too. The output is little-endian, one interface per usbmon
/// link type, with nanosecond timestamps; both passes read the input in bounded chunks.
package enum USBCaptureTrim {
    /// What a trim kept and dropped.
    package struct Report: Sendable, Hashable {
        /// Packets written, the enumeration's included.
        package var keptPackets = 0
        /// Of them, the enumeration's packets at address 0.
        package var enumerationPackets = 0
        /// Packets left out, of other devices and of other link types.
        package var droppedPackets = 0
        /// The devices left out, as `BUS:ADDRESS`, in order of first appearance (`1:0` for
        /// other enumerations at address 0).
        package var droppedDevices: [String] = []
        /// A last block cut short in the input, which was dropped.
        package var truncation: USBCaptureError?
    }

    /// Writes to `output` the packets of device `bus`:`address` in `input`.
    /// - Throws: ``USBCaptureError`` for a malformed input (naming its offset), or when the
    ///   output cannot be written or is the input.
    package static func trim(_ input: String, bus: Int, address: Int, to output: String) throws(USBCaptureError) -> Report {
        guard output != input else { throw USBCaptureError(file: output, offset: nil, reason: "the output must not be the input") }
        let enumeration = try enumerationPackets(input, bus: bus, address: address)
        var reader = try CapturePacketReader(path: input)
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw USBCaptureError(file: output, offset: nil, reason: "cannot create: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out = PcapngBlock.sectionHeader(application: "AccessoryKit capture trim")
        var interfaces: [UInt16: UInt32] = [:]
        var report = Report()
        var ordinal = 0
        var lastTime: Int64 = 0
        while let packet = try reader.next() {
            defer { ordinal += 1 }
            let raw = reader.bytes(start: packet.start, count: packet.count)
            guard let length = USBMonHeader.length(ofLinkType: packet.linkType), raw.count >= length else {
                report.droppedPackets += 1
                continue
            }
            let (packetBus, device) = (Int(raw.u16(12, bigEndian: packet.bigEndian)), Int(raw[11]))
            let kept = packetBus == bus && (device == address || (device == 0 && enumeration.contains(ordinal)))
            guard kept else {
                report.droppedPackets += 1
                let name = "\(packetBus):\(device)"
                if !report.droppedDevices.contains(name) { report.droppedDevices.append(name) }
                continue
            }
            report.keptPackets += 1
            if device == 0 { report.enumerationPackets += 1 }
            let interface: UInt32
            if let known = interfaces[packet.linkType] {
                interface = known
            } else {
                interface = UInt32(interfaces.count)
                interfaces[packet.linkType] = interface
                out += PcapngBlock.interfaceDescription(linkType: packet.linkType, name: "usbmon\(bus)", timestampResolution: 9)
            }
            lastTime = packet.timestamp ?? lastTime
            var bytes = [UInt8](raw)
            if packet.bigEndian, let header = try? USBMonHeader(raw, headerLength: length, bigEndian: true) {
                // The usbmon header is in the section's byte order; the output's is little-endian.
                var writer = ByteWriter(bigEndian: false, capacity: length)
                header.append(to: &writer, headerLength: length)
                bytes.replaceSubrange(0..<length, with: writer.bytes)
            }
            out += PcapngBlock.enhancedPacket(interface: interface, ticks: UInt64(clamping: lastTime), packet: bytes)
            if out.count >= 1 << 20 { try write(&out, to: fd, output) }
        }
        try write(&out, to: fd, output)
        // A device all of whose packets were kept is not dropped, even if seen under address 0.
        report.droppedDevices.removeAll { $0 == "\(bus):\(address)" }
        report.truncation = reader.truncation
        return report
    }

    /// The ordinals (among all packets of the file) of the address-0 packets on `bus` that
    /// belong to the enumeration ending in SET_ADDRESS(`address`).
    private static func enumerationPackets(_ input: String, bus: Int, address: Int) throws(USBCaptureError) -> Set<Int> {
        var reader = try CapturePacketReader(path: input)
        var kept: Set<Int> = []
        var run: [Int] = []
        var setAddress: [UInt64: Int] = [:]
        var ordinal = 0
        while let packet = try reader.next() {
            defer { ordinal += 1 }
            let raw = reader.bytes(start: packet.start, count: packet.count)
            guard let length = USBMonHeader.length(ofLinkType: packet.linkType), raw.count >= length,
                Int(raw.u16(12, bigEndian: packet.bigEndian)) == bus, raw[11] == 0,
                let header = try? USBMonHeader(raw, headerLength: length, bigEndian: packet.bigEndian)
            else { continue }
            run.append(ordinal)
            if let setup = header.setup, setup.requestType == 0x00, setup.request == 5 {
                setAddress[header.urbID] = Int(setup.value)
            } else if header.event != .submit, let value = setAddress.removeValue(forKey: header.urbID), header.status == 0 {
                // SET_ADDRESS done: the run so far was the enumeration of the device at `value`
                // (a failed one is retried within the same run).
                if value == address { kept.formUnion(run) }
                run.removeAll()
            }
        }
        // A SET_ADDRESS the capture ends before completing still names its device.
        if setAddress.values.contains(address) { kept.formUnion(run) }
        return kept
    }

    private static func write(_ bytes: inout [UInt8], to fd: Int32, _ path: String) throws(USBCaptureError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw USBCaptureError(file: path, offset: nil, reason: "cannot write: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
