/// Formats replay notifications as JSON Lines, as `accessoryctl replay --json` prints them
/// (TRACE-FORMAT.md, "Replay output").
///
/// One line per notification:
/// `{"notification":"connected","connectionID":1,"bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}`;
/// a connection that continues another adds `"previous"`; a disconnection adds `"reason"`
/// and, for an eviction, `"evidence"`. The last line is
/// `{"final":[…]}` with the registry's entries. Unknown fields are left out. Lines are
/// appended to ``bytes``; hand them to a sink with ``write(to:)``.
package struct ReplayOutput: Sendable {
    public private(set) var bytes: [UInt8] = []

    package init() {}

    /// Appends the line for one notification.
    package mutating func append(_ event: AccessoryEvent) {
        // Encoded with plain stores into a stack buffer and copied once; an event too long
        // for it (long strings) is encoded again straight into the array.
        let done = withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 1) { buffer -> Bool in
            var scratch = ScratchBytes(buffer)
            Self.encode(event, to: &scratch)
            guard !scratch.overflowed else { return false }
            bytes.append(contentsOf: scratch.written)
            return true
        }
        if !done { Self.encode(event, to: &bytes) }
    }

    private static func encode(_ event: AccessoryEvent, to bytes: inout some ByteOutput) {
        JSONBytes.appendRaw("{\"notification\":", to: &bytes)
        switch event {
        case .connected(let a):
            JSONBytes.appendRaw("\"connected\",", to: &bytes)
            Self.appendAccessory(a, to: &bytes)
            if let previous = a.previousConnectionID {
                JSONBytes.appendRaw(",\"previous\":", to: &bytes)
                JSONBytes.appendUInt(UInt(previous.rawValue), to: &bytes)
            }
        case .disconnected(let a, let reason):
            JSONBytes.appendRaw("\"disconnected\",", to: &bytes)
            Self.appendAccessory(a, to: &bytes)
            JSONBytes.appendRaw(",\"reason\":", to: &bytes)
            JSONBytes.appendString(reason.code, to: &bytes)
            if let evidence = reason.evidence {
                JSONBytes.appendRaw(",\"evidence\":", to: &bytes)
                JSONBytes.appendString(evidence, to: &bytes)
            }
        }
        JSONBytes.appendRaw("}\n", to: &bytes)
    }

    /// Appends the final line, `{"final":[…]}`, with `accessories` in the order given.
    package mutating func appendFinal(_ accessories: [Accessory]) {
        JSONBytes.appendRaw("{\"final\":[", to: &bytes)
        for (i, a) in accessories.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            Self.appendAccessory(a, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        JSONBytes.appendRaw("]}\n", to: &bytes)
    }

    /// Writes the pending lines to `sink` and empties ``bytes``.
    package mutating func write(to sink: inout some TraceSink) throws {
        guard !bytes.isEmpty else { return }
        try bytes.withUnsafeBytes { try sink.write($0) }
        bytes.removeAll(keepingCapacity: true)
    }

    /// Forgets the pending lines, keeping the storage for the next ones.
    package mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }

    /// The pending lines as text.
    package var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The line for one notification, without its newline.
    package static func line(for event: AccessoryEvent) -> String {
        var output = ReplayOutput()
        output.append(event)
        return String(decoding: output.bytes.dropLast(), as: UTF8.self)
    }

    /// The final line, without its newline.
    package static func finalLine(_ accessories: [Accessory]) -> String {
        var output = ReplayOutput()
        output.appendFinal(accessories)
        return String(decoding: output.bytes.dropLast(), as: UTF8.self)
    }

    /// `"connectionID":…,"bus":…,"address":…,"port":…,"vendor":…,"product":…,"serial":…`.
    private static func appendAccessory(_ a: Accessory, to out: inout some ByteOutput) {
        JSONBytes.appendRaw("\"connectionID\":", to: &out)
        JSONBytes.appendUInt(UInt(a.connectionID.rawValue), to: &out)
        out.append(UInt8(ascii: ","))
        TraceEncoding.appendDeviceFields(a.descriptor, details: false, to: &out)
    }
}
