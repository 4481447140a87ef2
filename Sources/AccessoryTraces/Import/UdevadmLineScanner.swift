import AccessoryCore
import Glibc

/// The line-by-line state of a `udevadm monitor` import: it turns lines into events and
/// counts what it could not read.
///
/// The common lines (event headers and `KEY=VALUE` properties) are read as bytes; only the
/// rare others (banners, pasted prompts, foreign text) become strings.
struct UdevadmLineScanner {
    /// USB device adds and removes whose property blocks have ended, oldest first.
    var completed: [UdevadmEvent] = []
    /// Whether an event's property block is open.
    private var inBlock = false
    /// The event whose property block is open, when it may become a record.
    private var current: UdevadmEvent?
    /// Whether the open event can become a record (a USB device's add or remove); the
    /// properties of other events are read past, not kept.
    private var keepsCurrent = false
    private(set) var sawEvent = false
    private(set) var sawBanner = false
    private(set) var unrecognized = 0
    private(set) var firstUnrecognized: (line: Int, text: String)?
    private(set) var looksLikeDmesg = 0
    private(set) var looksLikeLsusb = 0
    private(set) var looksLikeInfo = 0
    private(set) var looksBinary = false

    /// Ends the open event, keeping it when it is a USB device's add or remove.
    mutating func closeBlock() {
        if keepsCurrent, let current, current.isUSBDevice { completed.append(current) }
        current = nil
        keepsCurrent = false
        inBlock = false
    }

    /// Reads one line (without its newline).
    mutating func take(_ raw: UnsafeRawBufferPointer, number: Int) {
        var lo = 0
        var hi = raw.count
        if hi > lo && raw[hi - 1] == 0x0D { hi -= 1 }
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while lo < hi && isBlank(raw[lo]) { lo += 1 }
        while hi > lo && isBlank(raw[hi - 1]) { hi -= 1 }
        while lo < hi && raw[lo] == UInt8(ascii: ">") {
            lo += 1
            while lo < hi && isBlank(raw[lo]) { lo += 1 }
        }
        if lo == hi {
            closeBlock()
            return
        }
        let line = UnsafeRawBufferPointer(rebasing: raw[lo..<hi])
        let first = line[0]
        if first == UInt8(ascii: "K") || first == UInt8(ascii: "U"), let header = UdevadmEvent.Header(line) {
            closeBlock()
            sawEvent = true
            inBlock = true
            keepsCurrent = header.mayBeUSBDevice
            if keepsCurrent { current = UdevadmEvent(header, line, line: number) }
            return
        }
        if inBlock, let eq = memchr(line.baseAddress!, 0x3D, line.count).map({ line.baseAddress!.distance(to: $0) }),
            eq > 0, UnsafeRawBufferPointer(rebasing: line[..<eq]).allSatisfy(UdevadmImporter.isPropertyKeyByte)
        {
            if keepsCurrent {
                if let key = UdevadmProperties.key(named: UnsafeRawBufferPointer(rebasing: line[..<eq])) {
                    current!.properties[key] =
                        String(decoding: UnsafeRawBufferPointer(rebasing: line[(eq + 1)...]), as: UTF8.self)
                }
            }
            return
        }
        takeOther(line, number: number)
    }

    /// A line that is neither an event header nor a property: a banner, paste noise, or
    /// something unrecognized.
    private mutating func takeOther(_ bytes: UnsafeRawBufferPointer, number: Int) {
        let line = Substring(String(decoding: bytes, as: UTF8.self))
        if UdevadmImporter.isBanner(line) {
            sawBanner = true
            return
        }
        if UdevadmImporter.isPasteNoise(line) { return }
        unrecognized += 1
        if bytes.contains(0) || line.unicodeScalars.contains("\u{FFFD}") { looksBinary = true }
        if firstUnrecognized == nil {
            firstUnrecognized = (number, line.count > 60 ? "\(line.prefix(60))…" : String(line))
        }
        if line.hasPrefix("["), line.dropFirst().drop(while: { $0 == " " }).first?.isNumber == true {
            looksLikeDmesg += 1
        } else if (line.hasPrefix("Bus ") && line.contains(" Device ")) || line.hasPrefix("Device Descriptor") {
            looksLikeLsusb += 1
        } else if line.hasPrefix("P: ") || line.hasPrefix("E: ") || line.hasPrefix("udevadm info") {
            looksLikeInfo += 1
        }
    }
}
