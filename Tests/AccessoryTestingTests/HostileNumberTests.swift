import AccessoryCore
import AccessoryTraces
import AccessoryKit
import AccessoryTesting
import Foundation
import Testing

/// The public API's numbers, hostile ones included (`Int.min`, -1, huge, `.seconds(.max)`,
/// negative durations), through the real manager and sessions on simulated USB: every call
/// either works or throws `.invalidArgument` naming the value; none traps or hangs.
///
/// A fuzz run: `ACCESSORYKIT_FUZZ_SECONDS=300 swift test --filter HostileNumberTests`
/// draws random numbers for that long (`ACCESSORYKIT_FUZZ_SEED` picks the seed). Without it,
/// every listed value once and a few hundred random draws.
@Suite("Hostile numbers through the public API")
struct HostileNumberTests {
    static let loopback = "org.example.loopback"
    static let limit = 4096

    static let ints: [Int] = [
        .min, .min + 1, -65536, -4097, -9, -8, -7, -3, -1, 0, 1, 7, 8, 9, 4095, 4096, 4097, 5000, 65535, 65536,
        Int(Int32.max), Int(UInt32.max), .max - 8, .max,
    ]
    static let durations: [Duration] = [
        .seconds(Int64.min), .seconds(Int64.min) * 15, .seconds(-1), .nanoseconds(-1), .zero, .nanoseconds(1),
        .milliseconds(1), .seconds(1), .milliseconds(Int64(UInt32.max)), .milliseconds(Int64(UInt32.max) + 1),
        .seconds(Int64.max), .seconds(Int64.max) * 15,
        Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
    ]

    /// Reproducible draws of hostile numbers, from the package's own `SplitMix64`.
    struct Draws {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        mutating func int() -> Int {
            switch next() % 4 {
            case 0: return HostileNumberTests.ints[Int(next() % UInt64(HostileNumberTests.ints.count))]
            case 1: return Int(truncatingIfNeeded: next())
            case 2: return Int(next() % 10_000) - 5000
            default: return HostileNumberTests.ints[Int(next() % UInt64(HostileNumberTests.ints.count))] &+ (Int(next() % 3) - 1)
            }
        }
        mutating func duration() -> Duration {
            switch next() % 3 {
            case 0: return HostileNumberTests.durations[Int(next() % UInt64(HostileNumberTests.durations.count))]
            case 1: return .nanoseconds(Int64(truncatingIfNeeded: next()))
            default: return Duration(secondsComponent: Int64(truncatingIfNeeded: next()), attosecondsComponent: Int64(next() % 1_000_000_000_000_000_000))
            }
        }
    }

    /// How long to draw, or how many draws.
    static var budget: (seconds: Double?, draws: Int) {
        let env = ProcessInfo.processInfo.environment
        return (env["ACCESSORYKIT_FUZZ_SECONDS"].flatMap(Double.init), 300)
    }

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["ACCESSORYKIT_FUZZ_SEED"].flatMap { UInt64($0) } ?? 25
    }

    /// Runs `body` with every listed value first, then with draws until the budget is spent.
    static func forEachDraw(_ body: (inout Draws, Int) async throws -> Void) async rethrows {
        var draws = Draws(state: seed)
        let start = ContinuousClock.now
        let (seconds, count) = budget
        var i = 0
        while true {
            if let seconds {
                if ContinuousClock.now - start > .seconds(seconds) { break }
            } else if i >= count {
                break
            }
            try await body(&draws, i)
            i += 1
        }
    }

    static func outcome<T>(_ body: () async throws(AccessoryError) -> T) async -> Result<T, AccessoryError> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// An out-of-range value must be `.invalidArgument` naming it; an in-range one must not.
    static func check<T>(
        _ result: Result<T, AccessoryError>, valid: Bool, names: String, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch result {
        case .success:
            #expect(valid, "\(what) should have been refused", sourceLocation: sourceLocation)
        case .failure(let error):
            if valid {
                #expect(error.code != .invalidArgument, "\(what): \(error)", sourceLocation: sourceLocation)
            } else {
                #expect(error.code == .invalidArgument, "\(what): \(error)", sourceLocation: sourceLocation)
                #expect(error.message.contains(names), "\(what): \(error.message)", sourceLocation: sourceLocation)
            }
        }
    }

    /// A control responder that answers every IN request with 10,000 bytes and takes every OUT.
    static let talker = SimulatedAccessory(
        vendor: 0x1209, product: 0x0001, serial: "SN1",
        responder: SimulatedResponder(onWrite: { _, bytes in .respond([bytes]) }, onControl: { _, data in
            data == nil ? .data([UInt8](repeating: 0xa5, count: 10_000)) : .accept
        }))

    @Test("Control transfers: lengths outside 0...4096 and negative timeouts are refused before anything is sent")
    func controlTransfers() async throws {
        let usb = SimulatedUSB()
        await usb.plug(Self.talker)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let request = ControlRequest(.vendor, request: 1)
            await Self.forEachDraw { draws, i in
                let length = i < Self.ints.count ? Self.ints[i] : draws.int()
                let timeout = i < Self.durations.count ? Self.durations[i] : draws.duration()
                let lengthOK = (0...Self.limit).contains(length)
                let received = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.controlTransfer(from: accessory, request, length: length, timeout: lengthOK ? .seconds(1) : timeout)
                }
                Self.check(received, valid: lengthOK, names: "\(length)", "IN length \(length)")
                if case .success(let bytes) = received { #expect(bytes.count == length) }
                let timed = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.controlTransfer(from: accessory, request, length: 2, timeout: timeout)
                }
                Self.check(timed, valid: timeout >= .zero, names: "\(timeout)", "IN timeout \(timeout)")
                let count = Int(draws.next() % 5000)
                let sent = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.controlTransfer(to: accessory, request, data: [UInt8](repeating: 1, count: count), timeout: timeout)
                }
                Self.check(sent, valid: count <= Self.limit && timeout >= .zero, names: count > Self.limit ? "\(count)" : "\(timeout)",
                    "OUT of \(count) bytes, timeout \(timeout)")
            }
        }
    }

    @Test("A control transfer over 4,096 bytes is refused as Linux usbfs refuses it, saying why")
    func controlLimit() async throws {
        let usb = SimulatedUSB()
        await usb.plug(Self.talker)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let request = ControlRequest(.vendor, request: 1)
            #expect(try await manager.controlTransfer(from: accessory, request, length: 4096).count == 4096)
            let message =
                "control transfer of 5000 bytes exceeds Linux usbfs's limit of 4096 bytes per control transfer (libusb MAX_CTRL_BUFFER_LENGTH)"
            for attempt in 0..<2 {
                let result = await Self.outcome { () async throws(AccessoryError) in
                    if attempt == 0 {
                        _ = try await manager.controlTransfer(from: accessory, request, length: 5000)
                    } else {
                        try await manager.controlTransfer(to: accessory, request, data: [UInt8](repeating: 0, count: 5000))
                    }
                }
                guard case .failure(let error) = result else {
                    Issue.record("a 5000-byte control transfer went through")
                    continue
                }
                #expect(error.code == .invalidArgument)
                #expect(error.message == message)
            }
            let negative = await Self.outcome { () async throws(AccessoryError) in
                try await manager.controlTransfer(from: accessory, request, length: -3)
            }
            if case .failure(let error) = negative {
                #expect(error.code == .invalidArgument && error.message == "length -3 is out of range: 0...4096", "\(error)")
            } else {
                Issue.record("length -3 went through")
            }
        }
    }

    @Test("Session reads, writes and flushes: negative counts and timeouts are refused; a huge timeout waits forever")
    func sessions() async throws {
        let usb = SimulatedUSB()
        await usb.plug(Self.talker)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await manager.withSession(to: accessory, protocol: Self.loopback) { session in
                try await Self.forEachDraw { draws, i in
                    let count = i < Self.ints.count ? Self.ints[i] : draws.int()
                    let timeout = i < Self.durations.count ? Self.durations[i] : draws.duration()
                    // Ten bytes wait to be read, so a read of at most ten never waits.
                    try await session.write([UInt8](repeating: 3, count: 10), timeout: nil)
                    try await session.flush(timeout: nil)
                    let fits = (0...10).contains(count)
                    let read = await Self.outcome { () async throws(AccessoryError) in
                        try await session.read(exactly: count, timeout: fits ? timeout : .zero)
                    }
                    Self.check(read, valid: count >= 0 && (!fits || timeout >= .zero), names: count < 0 ? "\(count)" : "\(timeout)",
                        "read(exactly: \(count), timeout: \(timeout))")
                    if case .success(let bytes) = read { #expect(bytes.count == count) }
                    // Whatever is left: drain it, so the next round starts empty.
                    while let rest = try? await session.read(timeout: .zero), !rest.isEmpty {}
                    let wrote = await Self.outcome { () async throws(AccessoryError) in
                        try await session.write([1, 2], timeout: timeout)
                    }
                    Self.check(wrote, valid: timeout >= .zero, names: "\(timeout)", "write(timeout: \(timeout))")
                    let flushed = await Self.outcome { () async throws(AccessoryError) in
                        try await session.flush(timeout: timeout)
                    }
                    Self.check(flushed, valid: timeout >= .zero, names: "\(timeout)", "flush(timeout: \(timeout))")
                    let chunk = await Self.outcome { () async throws(AccessoryError) in
                        try await session.read(timeout: timeout)
                    }
                    Self.check(chunk, valid: timeout >= .zero, names: "\(timeout)", "read(timeout: \(timeout))")
                    while let rest = try? await session.read(timeout: .zero), !rest.isEmpty {}
                }
            }
        }
    }

    @Test("Session options out of range are refused when the session opens, naming the option")
    func sessionOptions() async throws {
        let usb = SimulatedUSB()
        await usb.plug(Self.talker)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            try await Self.forEachDraw { draws, i in
                var options = AccessorySession.Options()
                let value = i < Self.ints.count ? Self.ints[i] : draws.int()
                let timeout = draws.duration()
                let field = Int(draws.next() % 8)
                let valid: Bool
                let name: String
                switch field {
                case 0: (options.readsInFlight, valid, name) = (value, (1...1024).contains(value), "readsInFlight")
                case 1: (options.writesInFlight, valid, name) = (value, (1...1024).contains(value), "writesInFlight")
                case 2: (options.transferSize, valid, name) = (value, (1...(16 << 20)).contains(value), "transferSize")
                case 3: (options.readBufferCapacity, valid, name) = (value, value >= 0, "readBufferCapacity")
                case 4: (options.readBufferItemLimit, valid, name) = (value, value >= 0, "readBufferItemLimit")
                case 5: (options.writeBufferCapacity, valid, name) = (value, value >= 0, "writeBufferCapacity")
                case 6: (options.readTimeout, valid, name) = (timeout, timeout >= .zero, "readTimeout")
                default: (options.writeTimeout, valid, name) = (timeout, timeout >= .zero, "writeTimeout")
                }
                let opened = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.openSession(to: accessory, protocol: Self.loopback, options: options)
                }
                Self.check(opened, valid: valid, names: name, "\(name) \(field >= 6 ? "\(timeout)" : "\(value)")")
                if case .success(let session) = opened {
                    if field < 6 || timeout <= .seconds(10) {
                        // The options work: a round trip.
                        try await session.write([9], timeout: .seconds(1))
                        #expect(try await session.read(exactly: 1, timeout: .seconds(1)) == [9])
                    }
                    await session.close()
                }
            }
        }
    }

    @Test("Configuration durations out of range are refused when the manager starts")
    func configuration() async throws {
        var draws = Draws(state: Self.seed)
        for i in 0..<(Self.durations.count * 2) {
            let d = i < Self.durations.count ? Self.durations[i] : draws.duration()
            for debounce in [false, true] {
                let usb = SimulatedUSB()
                var configuration = AccessoryManager.Configuration()
                if debounce { configuration.debounce = d } else { configuration.reconcileInterval = d }
                let valid = debounce ? d >= .zero && d <= .milliseconds(Int64(UInt32.max)) : d >= .milliseconds(1) && d <= .milliseconds(Int64(UInt32.max))
                let started = await Self.outcome { () async throws(AccessoryError) in
                    try await AccessoryManager(configuration: configuration, usb: usb)
                }
                Self.check(started, valid: valid, names: debounce ? "debounce" : "reconcileInterval", "\(debounce ? "debounce" : "reconcileInterval") \(d)")
                if case .success(let manager) = started {
                    await usb.plug(Self.talker)
                    await usb.advance(by: .seconds(5))
                    #expect(await manager.connectedAccessories.count == 1)
                    await manager.shutdown()
                }
            }
        }
    }

    @Test("The simulation's clock: a negative advance or sleep never moves time back; nothing traps")
    func simulationTime() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(Self.talker)
        for d in Self.durations {
            let before = usb.clock.now
            await usb.advance(by: d < .zero ? d : .zero)
            #expect(usb.clock.now == before)
            await usb.sleep(for: d)
        }
        for count in Self.ints where count < 1000 {
            #expect(await usb.waitForSleepers(count) == (count <= 0))
        }
        // Sleeps that add up past what a Duration holds: BOOTTIME stops at the end of time.
        await usb.sleep(for: .seconds(Int64.max) * 15)
        await usb.sleep(for: .seconds(Int64.max) * 15)
        // A huge advance with nothing due moves the clock, without a trap.
        await usb.advance(by: .seconds(Int64.max) * 15)
        #expect(usb.clock.now.offset >= .seconds(Int64.max))
        await usb.unplug(device, leftEventDelay: .seconds(-1))
        #expect(await usb.devices.isEmpty)
    }

    @Test("switchToAccessoryMode(wait:) out of 0...49.7 days is refused before anything is sent")
    func androidWait() async throws {
        let identity = AndroidAccessoryIdentity(manufacturer: "Example", model: "Numbers")
        for wait in Self.durations {
            let usb = SimulatedUSB()
            await usb.plug(.androidPhone(serial: "PHONE"))
            try await withAccessoryManager(usb: usb) { manager in
                let phone = try #require(await manager.connectedAccessories.first)
                let valid = wait >= .zero && wait <= .milliseconds(Int64(UInt32.max))
                guard !valid else { return }
                let result = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.switchToAccessoryMode(phone, identity: identity, wait: wait)
                }
                Self.check(result, valid: false, names: "wait \(wait)", "wait \(wait)")
                let phoneDevice = try #require(await usb.devices.first)
                #expect(await usb.accessoryStrings(of: phoneDevice).allSatisfy { $0 == nil }, "nothing was sent")
            }
        }
    }

    @Test("updates(bufferLimit:) with any limit delivers, and stays bounded")
    func updatesBufferLimit() async throws {
        for limit in Self.ints {
            let usb = SimulatedUSB()
            await usb.plug(Self.talker)
            try await withAccessoryManager(usb: usb) { manager in
                let updates = await manager.updates(bufferLimit: limit)
                var iterator = updates.makeAsyncIterator()
                let first = await iterator.next()
                #expect(first != nil, "bufferLimit \(limit)")
                // 80 more notifications unread: a limit below 1 counts as 1, and past the limit
                // they collapse into a mark and the difference (at most the one device).
                for _ in 0..<40 { await usb.unplug(await usb.plug(Self.talker)) }
                #expect(updates.bufferedCount - 2 <= max(limit, 1), "bufferLimit \(limit): \(updates.bufferedCount) buffered")
            }
        }
    }
}
