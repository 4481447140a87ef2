import AccessoryCore
import Foundation
import Synchronization
@testable import AccessoryKit
import AccessoryLocking

/// A sysfs `bus/usb/devices` tree in a temporary directory, written file by file as the
/// kernel lays it out, for tests that need no USB at all.
final class FakeSysfs: Sendable {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory
            .appendingPathComponent("accessorykit-sysfs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A loopback accessory's descriptors: device, then one configuration with one
    /// vendor-specific interface (string index 4) and bulk endpoints 0x01 and 0x81.
    static func loopbackDescriptors(vendor: UInt16, product: UInt16, bcdDevice: UInt16 = 0x0100, deviceClass: UInt8 = 0) -> [UInt8] {
        let le = { (v: UInt16) in [UInt8(v & 0xff), UInt8(v >> 8)] }
        var d: [UInt8] = [18, 1, 0x00, 0x02, deviceClass, 0, 0, 64]
        d += le(vendor) + le(product) + le(bcdDevice) + [1, 2, 3, 1]
        d += [9, 2, 32, 0, 1, 1, 0, 0x80, 50]
        d += [9, 4, 0, 0, 2, 0xff, 0, 0, 4]
        d += [7, 5, 0x01, 2, 0, 2, 0]
        d += [7, 5, 0x81, 2, 0, 2, 0]
        return d
    }

    /// Writes a device directory. Strings are written exactly as given (the kernel adds a
    /// newline; pass it in to test that).
    func add(
        port: String, bus: Int, address: Int, vendor: UInt16, product: UInt16, serial: String? = "SN\n",
        manufacturer: String? = "Example\n", name: String? = "Loopback Accessory\n", deviceClass: UInt8 = 0,
        interfaceString: String? = "org.example.loopback\n", raw: [String: [UInt8]] = [:]
    ) throws {
        // Built aside and renamed into place, so a concurrent scan never sees a half-written
        // device (the kernel creates a device's attributes with its directory).
        let final = root + "/" + port
        let dir = root + "-staging-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer {
            rename(dir, final)
            try? FileManager.default.removeItem(atPath: dir)
        }
        let hex = { (v: UInt16) in Hex.four(v) + "\n" }
        var files: [String: [UInt8]] = [
            "busnum": Array("\(bus)\n".utf8), "devnum": Array("\(address)\n".utf8),
            "idVendor": Array(hex(vendor).utf8), "idProduct": Array(hex(product).utf8),
            "bcdDevice": Array("0100\n".utf8), "bDeviceClass": Array(String(format: "%02x\n", deviceClass).utf8),
            "bConfigurationValue": Array("1\n".utf8), "speed": Array("480\n".utf8),
            "descriptors": Self.loopbackDescriptors(vendor: vendor, product: product, deviceClass: deviceClass),
        ]
        if let serial { files["serial"] = Array(serial.utf8) }
        if let manufacturer { files["manufacturer"] = Array(manufacturer.utf8) }
        if let name { files["product"] = Array(name.utf8) }
        files.merge(raw) { _, new in new }
        for (file, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: dir + "/" + file))
        }
        if let interfaceString {
            let prefix = port.hasPrefix("usb") ? "\(bus)-0" : port
            let interfaceDir = dir + "/\(prefix):1.0"
            try FileManager.default.createDirectory(atPath: interfaceDir, withIntermediateDirectories: true)
            try Data(interfaceString.utf8).write(to: URL(fileURLWithPath: interfaceDir + "/interface"))
            try Data(" 0\n".utf8).write(to: URL(fileURLWithPath: interfaceDir + "/bAlternateSetting"))
        }
    }

    func remove(port: String) throws {
        try FileManager.default.removeItem(atPath: root + "/" + port)
    }
}

/// A host over a fake sysfs tree, whose hotplug notices the test sends and whose clocks the
/// test moves. The manager's timers are virtual (``VirtualTimers``): its reconciles run only
/// when the test advances the clock, so the manager tests never sleep.
final class FakeHost: USBHost {
    private struct State {
        var scanner: SysfsScanner
        var clocks = FakeUptime()
        var notices: HotplugNoticeQueue?
        var pending = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>
    private let timers = VirtualTimers()

    init(sysfsRoot: String) {
        state = Locked(State(scanner: SysfsScanner(root: sysfsRoot, includeHubs: true)))
    }

    /// Sets what the next manager started on this host uses.
    func configure(protocolTable: ProtocolTable, uptime: FakeUptime) {
        state.withLock {
            $0.scanner.protocolTable = protocolTable
            $0.clocks = uptime
        }
    }

    private var scanner: SysfsScanner { state.withLock { $0.scanner } }
    private var clocks: FakeUptime { state.withLock { $0.clocks } }

    var version: String? { "fake" }

    func scan() -> SysfsScanner.Result { scanner.scan() }

    func device(named port: String) -> USBDeviceInfo? { scanner.device(named: port) }

    func uptime() -> SystemUptime { clocks.now() }

    func schedule(at deadline: Duration, _ work: @escaping @Sendable () async -> Void) -> HostTimer {
        timers.schedule(at: deadline, work)
    }

    func startMonitoring() throws(AccessoryError) -> HotplugNoticeQueue? {
        let notices = HotplugNoticeQueue(
            onPosted: { [weak self] in self?.state.withLock { $0.pending += 1 } }, onHandled: { [weak self] count in self?.handled(count) })
        state.withLock { $0.notices = notices }
        return notices
    }

    func stopMonitoring() {
        let (notices, waiters) = state.withLock { s in
            defer { s = State(scanner: s.scanner, clocks: s.clocks) }
            return (s.notices, s.waiters)
        }
        notices?.finish()
        for w in waiters { w.resume() }
    }

    /// The manager came back for more notices: it has handled `count`.
    private func handled(_ count: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.pending = max(s.pending - count, 0)
            guard s.pending == 0 else { return [] }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    func open(bus: Int, address: Int, vendor: UInt16?, product: UInt16?) throws(AccessoryError) -> any USBDeviceConnection {
        throw AccessoryError(.notFound, "the fake host opens nothing")
    }

    private static func notice(_ kind: HotplugNotice.Kind, bus: Int, address: Int, port: String, vendor: UInt16, product: UInt16) -> HotplugNotice {
        let ports = port.split(separator: "-").last!.split(separator: ".").map { UInt8($0)! }
        let device = USBDeviceDescriptor(
            bcdUSB: 0x0200, deviceClass: 0, deviceSubclass: 0, deviceProtocol: 0, maxPacketSize0: 64, vendor: vendor,
            product: product, bcdDevice: 0x0100, manufacturerIndex: 1, productIndex: 2, serialNumberIndex: 3,
            configurationCount: 1)
        return HotplugNotice(kind: kind, device: USBDeviceRecord(bus: bus, address: address, portNumbers: ports, device: device))
    }

    /// Queues a notice without handing it to the manager, as libusb's event thread holds the
    /// notices of one pass: the manager is busy, say. ``send`` (or ``releaseHeld()``) hands
    /// it over.
    func hold(_ kind: HotplugNotice.Kind, bus: Int, address: Int, port: String, vendor: UInt16, product: UInt16) {
        state.withLock { s in
            s.pending += 1
            s.notices?.hold(Self.notice(kind, bus: bus, address: address, port: port, vendor: vendor, product: product))
        }
    }

    /// Hands the held notices to the manager, and returns once it has handled them.
    func releaseHeld() async {
        state.withLock { $0.notices }?.release()
        await idle()
    }

    /// Sends a notice, and returns once the manager has handled it.
    func send(_ kind: HotplugNotice.Kind, bus: Int, address: Int, port: String, vendor: UInt16, product: UInt16) async {
        let sent = state.withLock { s in
            guard let c = s.notices else { return false }
            s.pending += 1
            c.yield(Self.notice(kind, bus: bus, address: address, port: port, vendor: vendor, product: product))
            return true
        }
        guard sent else { return }
        await idle()
    }

    /// Returns once the manager has handled every notice sent or held.
    private func idle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s in
                if s.pending == 0 { return true }
                s.waiters.append(c)
                return false
            }
            if idle { c.resume() }
        }
    }

    /// Moves the clocks on by `duration` (awake), running the manager's timers (its due
    /// reconciles and ticks) on the way, in time order.
    func advance(by duration: Duration) async {
        let target = uptime().monotonic + duration
        while let due = timers.nextDeadline, due <= target {
            clocks.advance(awake: max(due - uptime().monotonic, .zero))
            for work in timers.takeDue(by: due) { await work() }
        }
        clocks.advance(awake: max(target - uptime().monotonic, .zero))
    }
}
