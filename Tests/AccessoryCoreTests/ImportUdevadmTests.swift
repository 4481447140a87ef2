import Foundation
import Testing
import AccessoryTestSupport
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("udevadm monitor importer")
struct ImportUdevadmTests {
    @Test("Port chains are ^digits-digits(.digits)*$, on 20,000 random strings")
    func portChainShape() {
        // The reference: the regular expression, spelled with split.
        func digits(_ s: Substring) -> Bool { !s.isEmpty && s.allSatisfy { ("0"..."9").contains($0) } }
        func reference(_ s: String) -> Bool {
            let parts = s.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, digits(parts[0]) else { return false }
            return parts[1].split(separator: ".", omittingEmptySubsequences: false).allSatisfy(digits)
        }
        var rng = SplitMix64(seed: 7)
        let alphabet = Array("0123-..-x9/")
        for _ in 0..<20_000 {
            let s = String((0..<Int(rng.next() % 9)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            #expect(PortChain.isValid(s.utf8) == reference(s), "\(s)")
        }
        for s in ["1-1", "3-12.4.3", "10-2.1"] { #expect(PortChain.isValid(s.utf8)) }
        for s in ["usb1", "1-", "-1", "1-1.", "1-1..2", "1.2-3", "1-1:1.0", "1--2", ""] { #expect(!PortChain.isValid(s.utf8), "\(s)") }
    }

    private static let corpus = SharedFolder.hotplugLogs

    private func importCorpus(_ name: String) throws -> UdevadmImport {
        let path = Self.corpus.appendingPathComponent(name).path
        try #require(FileManager.default.fileExists(atPath: path), "missing \(path)")
        return try UdevadmImporter().importLog(path: path)
    }

    private func importFixture(_ name: String) throws -> UdevadmImport {
        try UdevadmImporter().importLog(path: Fixtures.hotplugLogs.appendingPathComponent(name).path)
    }

    private func importText(_ text: String) throws -> UdevadmImport {
        try UdevadmImporter().importLog(text: text, name: "pasted.log")
    }

    private static let devicePath = "/devices/pci0000:00/0000:00:14.0/usb3/3-12/3-12.4/3-12.4.3"

    // MARK: The corpus

    @Test("A timestamp digit with a combining mark is no digit (a fuzzer's finding: it trapped)")
    func combiningMarkInATimestamp() throws {
        let header = "KERNEL[2231.5\u{301}00112] remove   /devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4.2 (usb)\n"
        #expect(UdevadmEvent(header: Substring(header.dropLast()), line: 1) == nil)
        #expect(UdevadmEvent.micros("2231.5\u{301}00112") == nil)
        #expect(UdevadmEvent.micros("2\u{301}231.500112") == nil)
        #expect(UdevadmEvent.micros("2231.500112") == 2_231_500_112)
        _ = try? importText(header)  // whatever it says, it must not trap
    }

    @Test("yunfei00: a CH340 removed and added on 1-7.2 (plain form, tty and usb-serial skipped)", .needsCorpus)
    func yunfei00() throws {
        let result = try importCorpus("yunfei00-udevadm-monitor-ch340-remove-add.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 1, address: nil, port: "1-7.2")), line: 9),
            TraceRecord(t: 4.177868, event: .added(AccessoryDescriptor(bus: 1, address: nil, port: "1-7.2")), line: 14),
        ])
        #expect(result.warnings.isEmpty && result.skippedLines == 0, "the command, banner and comment are known")
    }

    @Test("kiibohd: a keyboard re-enumerates on 3-12.4.3 (KERNEL and UDEV copies counted once)", .needsCorpus)
    func kiibohdReenumerate() throws {
        let result = try importCorpus("kiibohd-udevadm-monitor-kernel-udev-reenumerate.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 3, address: nil, port: "3-12.4.3")), line: 6),
            TraceRecord(t: 0.28715, event: .added(AccessoryDescriptor(bus: 3, address: nil, port: "3-12.4.3")), line: 9),
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test("kiibohd: an FTDI adapter with its udev properties", .needsCorpus)
    func kiibohdEnvironment() throws {
        let result = try importCorpus("kiibohd-udevadm-monitor-environment-ftdi.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .added(AccessoryDescriptor(
                bus: 3, address: 19, port: "3-12.4.3", vendor: 0x0403, product: 0x6001, bcdDevice: 0x0600,
                serial: "A50449P0", manufacturer: "FTDI", name: "FT232R USB UART")), line: 12),
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test("Files that are not udevadm monitor logs give a clear error naming the file", .needsCorpus, arguments: [
        ("kiibohd-dmesg-usb-disconnect-reconnect.log", "dmesg"),
        ("kiibohd-lsusb.txt", "lsusb"),
        ("kiibohd-1c11-b04d-lsusb-v.txt", "lsusb"),
        ("yunfei00-ch340-1a86-7523-udevadm-info.txt", "udevadm info"),
    ])
    func notLogs(name: String, guess: String) throws {
        try refused(Self.corpus.appendingPathComponent(name).path, guess: guess)
    }

    private func refused(_ path: String, guess: String) throws {
        try #require(FileManager.default.fileExists(atPath: path), "missing \(path)")
        let error = try #require(throws: TraceError.self) { try UdevadmImporter().importLog(path: path) }
        #expect(error.file == path && error.line == nil)
        #expect(error.reason.hasPrefix("not a udevadm monitor log: no KERNEL[…] or UDEV […] event lines"))
        #expect(error.reason.contains("it looks like \(guess) output"))
        #expect(error.description.hasPrefix("\(path): not a udevadm monitor log"))
    }

    @Test("Every file of the corpus either imports into a valid trace or is clearly refused", .needsCorpus)
    func everyCorpusFile() throws {
        #expect(try importsOrRefusesEveryFile(in: Self.corpus) == 3)
    }

    // MARK: The package's own samples of the same cases

    @Test("A serial adapter removed and added on 2-3.1 (plain form, banner, comment, tty and usb-serial skipped)")
    func fixturePlain() throws {
        let result = try importFixture("udevadm-monitor-plain-serial-remove-add.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 2, address: nil, port: "2-3.1")), line: 9),
            TraceRecord(t: 4.245123, event: .added(AccessoryDescriptor(bus: 2, address: nil, port: "2-3.1")), line: 14),
        ])
        #expect(result.warnings.isEmpty && result.skippedLines == 0, "the command, banner and comment are known")
    }

    @Test("A device re-enumerates on 1-4.2.1 (KERNEL and UDEV copies counted once)")
    func fixtureReenumerate() throws {
        let result = try importFixture("udevadm-monitor-kernel-udev-reenumerate.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .removed(DeviceRemoval(bus: 1, address: nil, port: "1-4.2.1")), line: 6),
            TraceRecord(t: 0.230656, event: .added(AccessoryDescriptor(bus: 1, address: nil, port: "1-4.2.1")), line: 9),
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test("A loopback accessory with its udev properties (--environment form)")
    func fixtureEnvironment() throws {
        let result = try importFixture("udevadm-monitor-environment-loopback.log")
        #expect(result.records == [
            TraceRecord(t: 0, event: .added(AccessoryDescriptor(
                bus: 1, address: 23, port: "1-6", vendor: 0x1209, product: 0x0001, bcdDevice: 0x0100,
                serial: "LB-0042", manufacturer: "Example", name: "Loopback Accessory")), line: 12),
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test("Samples that are not udevadm monitor logs give a clear error naming the file", arguments: [
        ("dmesg-usb-disconnect-reconnect.log", "dmesg"),
        ("lsusb.txt", "lsusb"),
        ("lsusb-v-loopback.txt", "lsusb"),
        ("udevadm-info-ttyACM0.txt", "udevadm info"),
    ])
    func fixtureNotLogs(name: String, guess: String) throws {
        try refused(Fixtures.hotplugLogs.appendingPathComponent(name).path, guess: guess)
    }

    @Test("Every sample either imports into a valid trace or is clearly refused")
    func everyFixtureFile() throws {
        #expect(try importsOrRefusesEveryFile(in: Fixtures.hotplugLogs) == 3)
    }

    /// Imports every file of a folder; a udevadm monitor log must give a valid trace, any
    /// other file a clear refusal. Returns how many imported.
    private func importsOrRefusesEveryFile(in folder: URL) throws -> Int {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files.count >= 7)
        var imported = 0
        for name in files {
            let path = folder.appendingPathComponent(name).path
            do {
                let result = try UdevadmImporter().importLog(path: path)
                #expect(name.contains("udevadm-monitor"), "\(name) imported")
                #expect(!result.records.isEmpty)
                // What comes out is a valid trace.
                var writer = TraceWriter(sink: ByteBufferSink())
                for r in result.records { try writer.write(r) }
                #expect(try TraceReader.readAll(bytes: writer.sink.bytes).records.map(\.event) == result.records.map(\.event))
                imported += 1
            } catch let error as TraceError {
                #expect(!name.contains("udevadm-monitor"), "\(name): \(error)")
                #expect(error.reason.hasPrefix("not a udevadm monitor log"))
            }
        }
        return imported
    }

    // MARK: Hand-written logs

    @Test("A KERNEL and UDEV pair is one event; the real order of interface and device lines is handled")
    func pairs() throws {
        let result = try importText("""
            KERNEL[100.000100] remove   \(Self.devicePath)/3-12.4.3:1.0 (usb)
            KERNEL[100.000200] remove   \(Self.devicePath) (usb)
            UDEV  [100.000300] remove   \(Self.devicePath)/3-12.4.3:1.0 (usb)
            UDEV  [100.000400] remove   \(Self.devicePath) (usb)
            KERNEL[100.500000] add      \(Self.devicePath) (usb)
            KERNEL[100.500100] add      \(Self.devicePath)/3-12.4.3:1.0 (usb)
            UDEV  [100.600000] add      \(Self.devicePath) (usb)
            UDEV  [100.600100] add      \(Self.devicePath)/3-12.4.3:1.0 (usb)
            KERNEL[101.000000] remove   \(Self.devicePath) (usb)
            UDEV  [101.000100] remove   \(Self.devicePath) (usb)
            KERNEL[102.000000] add      \(Self.devicePath) (usb)
            UDEV  [102.000100] add      \(Self.devicePath) (usb)
            """)
        #expect(result.records.map(\.jsonLine) == [
            #"{"t":0,"event":"remove","bus":3,"port":"3-12.4.3"}"#,
            #"{"t":0.4998,"event":"add","bus":3,"port":"3-12.4.3"}"#,
            #"{"t":0.9998,"event":"remove","bus":3,"port":"3-12.4.3"}"#,
            #"{"t":1.9998,"event":"add","bus":3,"port":"3-12.4.3"}"#,
        ])
        #expect(result.records.map(\.line) == [2, 5, 9, 11])
    }

    @Test("A second KERNEL add of the same path is a new event (re-plug), even before the UDEV copies")
    func replugBeforeUdev() throws {
        let result = try importText("""
            KERNEL[5.0] add \(Self.devicePath) (usb)
            KERNEL[5.1] remove \(Self.devicePath) (usb)
            KERNEL[5.2] add \(Self.devicePath) (usb)
            UDEV  [5.3] add \(Self.devicePath) (usb)
            UDEV  [5.4] remove \(Self.devicePath) (usb)
            UDEV  [5.5] add \(Self.devicePath) (usb)
            """)
        // Without SEQNUMs, a KERNEL copy pairs only with a UDEV copy that comes before the next
        // KERNEL copy of the same action and path: the first add stands alone, the second takes
        // the first UDEV add, and the last UDEV add stands alone.
        #expect(result.records.map(\.line) == [1, 2, 3, 6])
        #expect(result.records.map(\.t) == [0, 0.1, 0.2, 0.5])
    }

    @Test("With SEQNUMs, copies pair by SEQNUM whatever the order")
    func replugWithSeqnums() throws {
        var log = ""
        for (i, (source, action)) in [("KERNEL", "add"), ("KERNEL", "remove"), ("KERNEL", "add"),
                                       ("UDEV  ", "add"), ("UDEV  ", "remove"), ("UDEV  ", "add")].enumerated() {
            let seqnum = [1, 2, 3, 1, 2, 3][i]
            log += "\(source)[5.\(i)] \(action) \(Self.devicePath) (usb)\nSEQNUM=\(seqnum)\nBUSNUM=003\nDEVNUM=0\(10 + seqnum)\n\n"
        }
        let result = try importText(log)
        #expect(result.records.map(\.line) == [1, 6, 11])
        #expect(result.records.map(\.event) == [
            .added(AccessoryDescriptor(bus: 3, address: 11, port: "3-12.4.3")),
            .removed(DeviceRemoval(bus: 3, address: 12, port: "3-12.4.3")),
            .added(AccessoryDescriptor(bus: 3, address: 13, port: "3-12.4.3")),
        ])
    }

    @Test("A log cut mid-pair keeps the surviving copy")
    func cutLog() throws {
        let result = try importText("""
            UDEV  [10.000001] remove   /devices/pci0000:00/0000:00:14.0/usb1/1-1 (usb)
            KERNEL[11.000000] add      /devices/pci0000:00/0000:00:14.0/usb1/1-1 (usb)
            UDEV  [11.100000] add      /devices/pci0000:00/0000:00:14.0/usb1/1-1 (usb)
            KERNEL[12.000000] remove   /devices/pci0000:00/0000:00:14.0/usb1/1-1 (usb)
            """)
        #expect(result.records.map(\.jsonLine) == [
            #"{"t":0,"event":"remove","bus":1,"port":"1-1"}"#,
            #"{"t":0.999999,"event":"add","bus":1,"port":"1-1"}"#,
            #"{"t":1.999999,"event":"remove","bus":1,"port":"1-1"}"#,
        ])
    }

    @Test("Property blocks: the kernel's and udev's copies are merged; SEQNUMs that differ do not pair")
    func propertyBlocks() throws {
        let result = try importText("""
            monitor will print the received events for:
            UDEV - the event which udev sends out after rule processing
            KERNEL - the kernel uevent

            KERNEL[200.000000] add      /devices/pci0000:00/0000:00:14.0/usb2/2-3 (usb)
            ACTION=add
            DEVPATH=/devices/pci0000:00/0000:00:14.0/usb2/2-3
            DEVTYPE=usb_device
            PRODUCT=1209/1/100
            DEVNAME=bus/usb/002/007
            SEQNUM=100

            KERNEL[200.000100] add      /devices/pci0000:00/0000:00:14.0/usb2/2-3/2-3:1.0 (usb)
            DEVTYPE=usb_interface
            SEQNUM=101

            UDEV  [200.100000] add      /devices/pci0000:00/0000:00:14.0/usb2/2-3 (usb)
            ACTION=add
            BUSNUM=002
            DEVNUM=007
            DEVTYPE=usb_device
            ID_VENDOR=Example_Corp
            ID_VENDOR_ENC=Example\\x20Corp\\x2e
            ID_MODEL=7523
            ID_MODEL_ID=7523
            ID_SERIAL_SHORT=XYZ-1
            SEQNUM=100

            UDEV  [200.200000] add      /devices/pci0000:00/0000:00:14.0/usb2/2-3 (usb)
            DEVTYPE=usb_device
            SEQNUM=99
            """)
        #expect(result.records.map(\.jsonLine) == [
            #"{"t":0,"event":"add","bus":2,"address":7,"port":"2-3","vendor":"1209","product":"7523","serial":"XYZ-1","manufacturer":"Example Corp.","bcdDevice":"0100"}"#,
            #"{"t":0.2,"event":"add","bus":2,"port":"2-3"}"#,
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test("Root hubs, interfaces, other subsystems and other actions are skipped")
    func filtering() throws {
        let result = try importText("""
            KERNEL[1.0] add      /devices/pci0000:00/0000:00:14.0/usb3 (usb)
            UDEV  [1.1] add      /devices/pci0000:00/0000:00:14.0/usb3 (usb)
            KERNEL[1.2] add      /devices/pci0000:00/0000:00:14.0/usb3/3-1/3-1:1.0 (usb)
            KERNEL[1.3] add      /devices/pci0000:00/0000:00:14.0/usb3/3-1/3-1:1.0/ttyUSB0/tty/ttyUSB0 (tty)
            KERNEL[1.4] add      /devices/virtual/block/3-1 (block)
            KERNEL[1.5] bind     /devices/pci0000:00/0000:00:14.0/usb3/3-1 (usb)
            KERNEL[1.6] change   /devices/pci0000:00/0000:00:14.0/usb3/3-1 (usb)
            KERNEL[1.7] unbind   /devices/pci0000:00/0000:00:14.0/usb3/3-1 (usb)
            KERNEL[1.8] add      /devices/pci0000:00/0000:00:14.0/usb3/3-2 (usb)
            DEVTYPE=usb_interface
            """)
        #expect(result.records.isEmpty && result.warnings.isEmpty)
    }

    @Test("Pasted text: quote prefixes, prompts, banner, comments, ^C; other lines are counted")
    func pastedText() throws {
        let result = try importText("""
            Here is what I saw:
            > user@host:~$ sudo udevadm monitor --kernel --udev --property
            > monitor will print the received events for:
            > UDEV - the event which udev sends out after rule processing
            >
            > KERNEL[50.25] add /devices/pci0000:00/0000:00:14.0/usb1/1-1.4 (usb)
            > BUSNUM=001
            > DEVNUM=005
            >
            > UDEV  [50.5] add /devices/pci0000:00/0000:00:14.0/usb1/1-1.4 (usb)
            >> ID_VENDOR_ID=1209
            > ID_MODEL_ID=0001
            > ID_SERIAL_SHORT=SN1
            >
            $ # unplugged it
            # this is a comment
            >   UDEV  [49.0] remove /devices/pci0000:00/0000:00:14.0/usb1/1-1.4 (usb)\r
            ^C
            [user@host ~]$
            Then it stopped.
            """)
        #expect(result.records.map(\.jsonLine) == [
            #"{"t":0,"event":"add","bus":1,"address":5,"port":"1-1.4","vendor":"1209","product":"0001","serial":"SN1"}"#,
            #"{"t":0,"event":"remove","bus":1,"port":"1-1.4"}"#,
        ], "a timestamp that goes backwards is clamped")
        #expect(result.skippedLines == 2)
        #expect(result.warnings.map(\.description) == [
            #"pasted.log:1: skipped 2 lines that are not udevadm monitor output (first: "Here is what I saw:")"#,
        ])
    }

    @Test("A udevadm log without USB device events is an empty trace; anything else is refused")
    func emptyAndForeign() throws {
        #expect(try importText("monitor will print the received events for:\nKERNEL - the kernel uevent\n").records.isEmpty)
        #expect(try importText("KERNEL[1.0] add /devices/virtual/net/tun0 (net)\n").records.isEmpty)
        for (text, hint) in [
            ("", "the file is empty"),
            ("[ 1.234] usb 1-1: new device\n[ 2.5] usb 1-1: USB disconnect\n", "it looks like dmesg output"),
            ("Bus 001 Device 002: ID 8087:800a Intel Corp.\n", "it looks like lsusb output"),
            ("hello\0world", "it looks like binary data"),
            ("just some text\n", "; record one with"),
        ] {
            let error = try #require(throws: TraceError.self) { try importText(text) }
            #expect(error.reason.contains(hint), "\(text): \(error)")
            #expect(error.description.hasPrefix("pasted.log: not a udevadm monitor log"))
        }
        #expect(throws: TraceError(file: "/nonexistent/x.log", line: nil, reason: "cannot open: No such file or directory")) {
            try UdevadmImporter().importLog(path: "/nonexistent/x.log")
        }
    }

    @Test("udev's fallback of the hexadecimal ID is not a manufacturer or a name")
    func noInventedStrings() throws {
        let result = try importText("""
            UDEV  [61646.838227] add      /devices/pci0000:00/0000:00:14.0/usb1/1-7/1-7.2 (usb)
            DEVTYPE=usb_device
            DEVNAME=/dev/bus/usb/001/012
            ID_VENDOR=1a86
            ID_VENDOR_ENC=1a86
            ID_VENDOR_ID=1a86
            ID_MODEL=USB_Serial
            ID_MODEL_ENC=USB\\x20Serial
            ID_MODEL_ID=7523
            ID_REVISION=0264
            """)
        #expect(result.records.map(\.jsonLine) == [
            #"{"t":0,"event":"add","bus":1,"address":12,"port":"1-7.2","vendor":"1a86","product":"7523","name":"USB Serial","bcdDevice":"0264"}"#,
        ])
    }

    // MARK: Streaming

    @Test("Read in 7-byte chunks, every sample gives the same records as read whole")
    func tinyChunks() throws {
        for name in ["udevadm-monitor-plain-serial-remove-add.log", "udevadm-monitor-kernel-udev-reenumerate.log",
                     "udevadm-monitor-environment-loopback.log"] {
            let path = Fixtures.hotplugLogs.appendingPathComponent(name).path
            var reader = try UdevadmReader(path: path, chunkSize: 7)
            var records: [TraceRecord] = []
            while let record = try reader.next() { records.append(record) }
            let whole = try UdevadmImporter().importLog(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: path)
            #expect(!records.isEmpty, "\(name)")
            #expect(records == whole.records, "\(name)")
            #expect(reader.warnings == whole.warnings, "\(name)")
        }
    }

    /// A KERNEL add of the device, `others` paired events of other devices, then udev's copy.
    private func lateUdevCopy(after others: Int) throws -> [Int] {
        var log = "KERNEL[1.0] add \(Self.devicePath) (usb)\n"
        for i in 0..<others {
            let path = "/devices/pci0000:00/0000:00:14.0/usb1/1-\(i % 100 + 1)"
            log += "KERNEL[2.0] add \(path) (usb)\nUDEV  [2.0] add \(path) (usb)\n"
        }
        log += "UDEV  [3.0] add \(Self.devicePath) (usb)\nBUSNUM=003\nDEVNUM=007\n"
        return try importText(log).records.compactMap { record in
            if case .added(let d) = record.event, d.port == "3-12.4.3" { return record.line }
            return nil
        }
    }

    @Test("udev's copy pairs however late it comes within the window, and stays alone beyond it")
    func pairingWindow() throws {
        // Within the window: one event, on the KERNEL line, with udev's properties.
        #expect(try lateUdevCopy(after: 100) == [1])
        #expect(try lateUdevCopy(after: UdevadmPairing.window - 1) == [1])
        // Beyond it: the KERNEL copy was handed on alone, and udev's copy is a second add.
        let beyond = try lateUdevCopy(after: UdevadmPairing.window + 10)
        #expect(beyond.count == 2)
        #expect(beyond.first == 1)
    }
}
