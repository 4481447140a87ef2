import Foundation

/// Turns a `udevadm monitor` log into trace records: the `add` and `remove` events of USB
/// devices, each once.
///
/// It reads the plain form (`KERNEL[100908.331118] remove   /devices/…/3-12.4.3 (usb)` and
/// `UDEV  […] …`), the `--property`/`--environment` form (`KEY=VALUE` lines under each
/// header, up to a blank line), and both mixed. Pasted text is tolerated: `> ` quote
/// prefixes, shell prompts and the `udevadm monitor` command, the monitor's banner, comments
/// and `^C`; other lines are skipped and counted in a warning.
///
/// - Only USB devices count: `DEVTYPE=usb_device`, or without `DEVTYPE` a path ending in a
///   port chain such as `1-1.4`. Root hubs, interfaces, other subsystems and other actions
///   are skipped.
/// - The kernel's copy of an event and udev's copy of it become one record. A `KERNEL` event
///   pairs with the next `UDEV` event of the same action and path that comes before another
///   `KERNEL` event of that action and path (and has the same `SEQNUM`, when both have one);
///   a copy whose partner was cut from the log is kept alone. The pair's properties are
///   merged, and its time and line are the first copy's.
/// - Fields come only from the log: bus and address from `BUSNUM`/`DEVNUM` or `DEVNAME`,
///   the bus from the path otherwise; VID, PID and bcdDevice from `ID_VENDOR_ID`,
///   `ID_MODEL_ID` or `PRODUCT`; the serial from `ID_SERIAL_SHORT`; the manufacturer and
///   name from `ID_VENDOR_ENC`/`ID_VENDOR` and `ID_MODEL_ENC`/`ID_MODEL` (not udev's
///   fallback to the hexadecimal ID). The port is the path's last segment.
/// - `t` is the monitor timestamp minus that of the first imported event; where the log goes
///   backwards, `t` stays at the previous value.
public struct UdevadmImporter: Sendable {
    public init() {}

    /// Imports the log at `path`.
    /// - Throws: ``TraceError`` if the file cannot be read or is not a `udevadm monitor` log.
    public func importLog(path: String) throws(TraceError) -> UdevadmImport {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw TraceError(file: path, line: nil, reason: reason)
        }
        let result = data.withUnsafeBytes { raw in
            Result { () throws(TraceError) in try importLog(bytes: raw.bindMemory(to: UInt8.self), name: path) }
        }
        return try result.get()
    }

    /// Imports a log held in memory; `name` stands for the file in errors and warnings.
    public func importLog(text: String, name: String = "<memory>") throws(TraceError) -> UdevadmImport {
        try importLog(bytes: Array(text.utf8), name: name)
    }

    /// Imports a log held in memory; `name` stands for the file in errors and warnings.
    public func importLog(bytes: [UInt8], name: String = "<memory>") throws(TraceError) -> UdevadmImport {
        try bytes.withUnsafeBufferPointer { buffer throws(TraceError) in try importLog(bytes: buffer, name: name) }
    }

    private func importLog(bytes: UnsafeBufferPointer<UInt8>, name: String) throws(TraceError) -> UdevadmImport {
        var scan = Scan()
        // Split on bytes: as Characters, "\r\n" is one grapheme and would hide the newline.
        var start = 0
        var number = 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            number += 1
            scan.take(Substring(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)), number: number)
            start = end + 1
        }
        scan.closeBlock()
        guard scan.sawEvent || scan.sawBanner else {
            throw TraceError(file: name, line: nil, reason: Self.notALogReason(bytes: bytes, scan: scan))
        }
        var warnings: [TraceWarning] = []
        if let (line, text) = scan.firstUnrecognized {
            let s = scan.unrecognized == 1 ? "" : "s"
            warnings.append(TraceWarning(
                file: name, line: line,
                reason: "skipped \(scan.unrecognized) line\(s) that are not udevadm monitor output (first: \"\(text)\")"))
        }
        return UdevadmImport(records: Self.records(from: scan.events), warnings: warnings, skippedLines: scan.unrecognized)
    }

    // MARK: Pairing

    private struct PairKey: Hashable {
        var action: String
        var devpath: String
    }

    /// Keeps USB device adds and removes, pairs the kernel and udev copies, and times them.
    static func records(from events: [UdevadmEvent]) -> [TraceRecord] {
        var merged: [UdevadmEvent] = []
        /// The latest KERNEL copy of each action and path, while it waits for its UDEV copy.
        var open: [PairKey: Int] = [:]
        /// Unpaired KERNEL copies by SEQNUM.
        var bySeqnum: [String: Int] = [:]
        for event in events where (event.action == "add" || event.action == "remove") && event.isUSBDevice {
            let key = PairKey(action: event.action, devpath: event.devpath)
            let seqnum = event.properties["SEQNUM"]
            switch event.source {
            case .kernel:
                open[key] = merged.count  // an earlier unpaired KERNEL copy stays alone
                if let seqnum { bySeqnum[seqnum] = merged.count }
                merged.append(event)
            case .udev:
                var partner: Int?
                if let seqnum, let i = bySeqnum[seqnum] {
                    if merged[i].action == event.action && merged[i].devpath == event.devpath { partner = i }
                } else if let i = open[key], seqnum == nil || merged[i].properties["SEQNUM"] == nil {
                    partner = i
                }
                guard let i = partner else {
                    merged.append(event)
                    continue
                }
                merged[i].absorb(event)
                if open[key] == i { open[key] = nil }
                if let s = merged[i].properties["SEQNUM"], bySeqnum[s] == i { bySeqnum[s] = nil }
            }
        }
        guard let origin = merged.first?.micros else { return [] }
        var lastT = 0.0
        return merged.map { event in
            let t = max(lastT, Double(event.micros - origin) / 1_000_000)
            lastT = t
            return TraceRecord(t: t, event: event.hotplugEvent, line: event.line)
        }
    }

    // MARK: Lines

    /// The line-by-line state of an import.
    private struct Scan {
        var events: [UdevadmEvent] = []
        /// The event whose property block is open.
        var current: UdevadmEvent?
        /// Whether ``current`` can become a record (a USB add or remove); the properties of
        /// other events are read past, not kept.
        var keepsCurrent = false
        var sawEvent = false
        var sawBanner = false
        var unrecognized = 0
        var firstUnrecognized: (Int, String)?
        var looksLikeDmesg = 0
        var looksLikeLsusb = 0
        var looksLikeInfo = 0

        /// Ends the open event, keeping it when it is a USB device's add or remove.
        mutating func closeBlock() {
            if keepsCurrent, let current, current.isUSBDevice { events.append(current) }
            current = nil
            keepsCurrent = false
        }

        mutating func take(_ raw: Substring, number: Int) {
            var line = raw
            if line.last == "\r" { line = line.dropLast() }
            line = UdevadmImporter.trimmed(line)
            while line.first == ">" {
                line = UdevadmImporter.trimmed(line.dropFirst())
            }
            if line.isEmpty {
                closeBlock()
                return
            }
            if line.first == "K" || line.first == "U", let event = UdevadmEvent(header: line, line: number) {
                closeBlock()
                sawEvent = true
                keepsCurrent = (event.action == "add" || event.action == "remove") && event.subsystem == "usb"
                current = event
                return
            }
            if current != nil, let eq = line.utf8.firstIndex(of: UInt8(ascii: "=")), UdevadmImporter.isPropertyKey(line[..<eq]) {
                if keepsCurrent { current!.properties[String(line[..<eq])] = String(line[line.index(after: eq)...]) }
                return
            }
            if UdevadmImporter.isBanner(line) {
                sawBanner = true
                return
            }
            if UdevadmImporter.isPasteNoise(line) { return }
            unrecognized += 1
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

    static func trimmed(_ s: Substring) -> Substring {
        let utf8 = s.utf8
        let blank = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !blank($0) }) else { return s[s.endIndex...] }
        let last = utf8.lastIndex(where: { !blank($0) })!
        return s[first...last]
    }

    /// `[A-Z0-9_]+`, the shape of a udev property name.
    static func isPropertyKey(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { b in
            (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: "_") || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
        }
    }

    /// The three lines `udevadm monitor` prints when it starts.
    static func isBanner(_ s: Substring) -> Bool {
        s.hasPrefix("monitor will print the received events") || s.hasPrefix("UDEV - the event which udev")
            || s.hasPrefix("KERNEL - the kernel uevent")
    }

    /// Shell prompts, the `udevadm monitor` command, comments, `^C` and code fences.
    static func isPasteNoise(_ s: Substring) -> Bool {
        if s.hasPrefix("#") || s.hasPrefix("//") || s.hasPrefix("^C") || s.hasPrefix("```") { return true }
        if s.hasPrefix("$") || s.hasPrefix("%") { return true }
        let command = s.hasPrefix("sudo ") ? s.dropFirst(5) : s
        if command.hasPrefix("udevadm monitor") || command == "udevadm" { return true }
        // user@host:~$ …, [user@host dir]$ …, root@host:/# …
        return s.prefix { $0 != " " }.contains("@") && (s.contains("$") || s.contains("#"))
    }

    private static func notALogReason(bytes: UnsafeBufferPointer<UInt8>, scan: Scan) -> String {
        var reason = "not a udevadm monitor log: no KERNEL[…] or UDEV […] event lines and no monitor banner"
        if bytes.isEmpty {
            reason += " (the file is empty)"
        } else if bytes.contains(0) || String(decoding: bytes, as: UTF8.self).unicodeScalars.contains("\u{FFFD}") {
            reason += " (it looks like binary data)"
        } else if scan.looksLikeDmesg > 0 && scan.looksLikeDmesg * 2 >= scan.unrecognized {
            reason += " (it looks like dmesg output)"
        } else if scan.looksLikeLsusb > 0 {
            reason += " (it looks like lsusb output)"
        } else if scan.looksLikeInfo > 0 {
            reason += " (it looks like udevadm info output)"
        }
        return reason + "; record one with `udevadm monitor --kernel --udev --property --subsystem-match=usb`"
    }
}
