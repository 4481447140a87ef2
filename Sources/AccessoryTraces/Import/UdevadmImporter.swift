import AccessoryCore

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
/// - The kernel's copy of an event and udev's copy of it become one record (`UdevadmPairing`). A `KERNEL` event
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
///
/// The log is read in chunks by `UdevadmReader`, which hands records on one at a time;
/// these methods gather them into one ``UdevadmImport``.
public struct UdevadmImporter: Sendable {
    /// An importer.
    public init() {}


    /// Imports the log at `path`.
    /// - Throws: ``TraceError`` if the file cannot be read or is not a `udevadm monitor` log.
    public func importLog(path: String) throws(TraceError) -> UdevadmImport {
        try Self.gather(UdevadmReader(path: path))
    }

    /// Imports a log held in memory; `name` stands for the file in errors and warnings.
    public func importLog(text: String, name: String = "<memory>") throws(TraceError) -> UdevadmImport {
        try importLog(bytes: Array(text.utf8), name: name)
    }

    /// Imports a log held in memory; `name` stands for the file in errors and warnings.
    package func importLog(bytes: [UInt8], name: String = "<memory>") throws(TraceError) -> UdevadmImport {
        try Self.gather(UdevadmReader(bytes: bytes, name: name))
    }

    private static func gather(_ reader: consuming UdevadmReader) throws(TraceError) -> UdevadmImport {
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        return UdevadmImport(records: records, warnings: reader.warnings, skippedLines: reader.skippedLines)
    }

    // MARK: Lines

    static func trimmed(_ s: Substring) -> Substring {
        let utf8 = s.utf8
        let blank = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !blank($0) }) else { return s[s.endIndex...] }
        let last = utf8.lastIndex(where: { !blank($0) })!
        return s[first...last]
    }

    /// `[A-Za-z0-9_]`, a byte of a udev property name.
    static func isPropertyKeyByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
            || b == UInt8(ascii: "_") || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
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
}
