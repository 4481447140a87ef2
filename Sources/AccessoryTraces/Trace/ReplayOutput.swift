import AccessoryCore
/// Formats replay notifications as JSON Lines, as `accessoryctl replay --json` prints them
/// (<doc:TraceFormat>, "Replay output").
///
/// One line per notification:
/// `{"notification":"connected","connectionID":1,"bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}`;
/// a connection that continues another adds `"previous"`; a disconnection adds `"reason"`
/// and, for an eviction, `"evidence"`. The last line is
/// `{"final":[…]}` with the registry's entries. Unknown fields are left out. Lines are
/// kept in ``bytes`` until handed to a sink with ``write(to:)``.
package struct ReplayOutput: Sendable {
    /// The pending lines are `storage[..<count]`; the rest is room that the next line is
    /// encoded into in place, with plain stores (no per-line copy, no per-byte `append`).
    private var storage: [UInt8] = []
    /// How many bytes are pending.
    package private(set) var count = 0
    /// Room made before each line: lines longer than this are encoded apart and copied.
    private static let lineRoom = 1024

    package init() {}

    /// The pending lines.
    package var bytes: ArraySlice<UInt8> { storage[..<count] }

    /// Appends the line for one notification.
    package mutating func append(_ event: AccessoryEvent) {
        if storage.count - count < Self.lineRoom { makeRoom(Self.lineRoom) }
        let start = count
        let written = storage.withUnsafeMutableBytes { raw -> Int? in
            var scratch = ScratchBytes(UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
            Self.encode(event, to: &scratch)
            return scratch.overflowed ? nil : scratch.count
        }
        if let written {
            count += written
        } else {
            var line: [UInt8] = []
            Self.encode(event, to: &line)
            appendBytes(line)
        }
    }

    /// Grows the room after the pending bytes to at least `room` (doubling, so that a
    /// caller that never writes out still appends in amortized constant time).
    private mutating func makeRoom(_ room: Int) {
        let needed = count + room
        guard storage.count < needed else { return }
        storage.append(contentsOf: repeatElement(0, count: max(needed, storage.count * 2) - storage.count))
    }

    private mutating func appendBytes(_ line: [UInt8]) {
        makeRoom(line.count)
        let start = count
        storage.withUnsafeMutableBytes { raw in
            line.withUnsafeBytes { (raw.baseAddress! + start).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        count += line.count
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
        var line: [UInt8] = []
        JSONBytes.appendRaw("{\"final\":[", to: &line)
        for (i, a) in accessories.enumerated() {
            if i > 0 { line.append(UInt8(ascii: ",")) }
            line.append(UInt8(ascii: "{"))
            Self.appendAccessory(a, to: &line)
            line.append(UInt8(ascii: "}"))
        }
        JSONBytes.appendRaw("]}\n", to: &line)
        appendBytes(line)
    }

    /// Hands the pending lines to `body` (to write them out) without copying them.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Writes the pending lines to `sink` and empties ``bytes``.
    package mutating func write(to sink: inout some TraceSink) throws {
        guard count > 0 else { return }
        try withUnsafeBytes { try sink.write($0) }
        count = 0
    }

    /// Forgets the pending lines, keeping the storage for the next ones.
    package mutating func removeAll() {
        count = 0
    }

    /// The pending lines as text.
    package var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The line for one notification, without its newline.
    package static func line(for event: AccessoryEvent) -> String {
        withUnsafeTemporaryAllocation(byteCount: lineRoom, alignment: 1) { buffer in
            var scratch = ScratchBytes(buffer)
            encode(event, to: &scratch)
            if !scratch.overflowed { return String(decoding: scratch.written.dropLast(), as: UTF8.self) }
            var line: [UInt8] = []
            encode(event, to: &line)
            return String(decoding: line.dropLast(), as: UTF8.self)
        }
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
