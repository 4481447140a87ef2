import AccessoryCore
/// Generates realistic hotplug traces from a seed, one record at a time.
///
/// A fixed set of devices (each with its own VID, PID, serial and port on one of the buses)
/// is plugged and unplugged at random, sometimes re-plugged at once. Addresses are allocated
/// as the kernel does: the next free address on the bus after the last one given, wrapping
/// after 127 (1 is the root hub's). The system sometimes sleeps and wakes, and while it sleeps
/// devices may leave or re-enumerate with no event; sometimes the monitor overflows after
/// silently losing a few events. A `snapshot` with the true device list opens the trace,
/// follows every ``Configuration/snapshotInterval`` events, and always ends it.
///
/// The same configuration gives the same trace on every run. Memory is bounded by the
/// device count, not the trace length.
package struct TraceGenerator: Sequence, IteratorProtocol, Sendable {
    package struct Configuration: Hashable, Sendable {
        package var seed: UInt64
        /// How many events (`add`, `remove`, `sleep`, `wake`, `overflow`) to generate;
        /// snapshots come on top.
        package var events: Int
        package var devices: Int
        package var buses: Int
        /// Events between two snapshots; 0 for snapshots only at the start and the end.
        package var snapshotInterval: Int
        /// The chance that a step is a sleep/wake pair.
        package var sleepProbability: Double
        /// The chance that a step is an overflow (after one to three silently lost changes).
        package var overflowProbability: Double
        /// The chance that a remove is followed at once by an add of the same device.
        package var replugProbability: Double
        /// The chance that a device present at sleep leaves or re-enumerates with no event.
        package var silentChangeWhileAsleep: Double
        /// The share of devices present at the start.
        package var initiallyPresent: Double

        package init(
            seed: UInt64 = 1, events: Int = 1000, devices: Int = 8, buses: Int = 2,
            snapshotInterval: Int = 100, sleepProbability: Double = 0.002,
            overflowProbability: Double = 0.002, replugProbability: Double = 0.2,
            silentChangeWhileAsleep: Double = 0.3, initiallyPresent: Double = 0.5
        ) {
            self.seed = seed
            self.events = events
            self.devices = devices
            self.buses = buses
            self.snapshotInterval = snapshotInterval
            self.sleepProbability = sleepProbability
            self.overflowProbability = overflowProbability
            self.replugProbability = replugProbability
            self.silentChangeWhileAsleep = silentChangeWhileAsleep
            self.initiallyPresent = initiallyPresent
        }
    }

    /// A device of the simulated world; `address` is `nil` while unplugged.
    private struct Device: Sendable {
        var descriptor: AccessoryDescriptor
        var isPresent: Bool { descriptor.address != nil }
    }

    /// Kernel-like address allocation on one bus.
    private struct Bus: Sendable {
        var used = [Bool](repeating: false, count: 128)
        var next = 2

        init() {
            used[1] = true  // the root hub
        }

        mutating func allocate() -> Int {
            var candidate = next
            for _ in 1...127 {
                if !used[candidate] {
                    used[candidate] = true
                    next = candidate >= 127 ? 1 : candidate + 1
                    return candidate
                }
                candidate = candidate >= 127 ? 1 : candidate + 1
            }
            preconditionFailure("more than 126 devices on one bus")
        }

        mutating func free(_ address: Int) {
            used[address] = false
        }
    }

    private struct Model {
        var vendor: UInt16, product: UInt16, bcd: UInt16
        var manufacturer: String?, name: String?
        var hasSerial: Bool
        var protocols: [String]?
    }

    private static let models: [Model] = [
        Model(vendor: 0x1209, product: 0x0001, bcd: 0x0100, manufacturer: "pid.codes", name: "Loopback",
              hasSerial: true, protocols: ["org.example.loopback"]),
        Model(vendor: 0x0403, product: 0x6001, bcd: 0x0600, manufacturer: "FTDI", name: "FT232R USB UART",
              hasSerial: true, protocols: nil),
        Model(vendor: 0x1a86, product: 0x7523, bcd: 0x0264, manufacturer: nil, name: "USB Serial",
              hasSerial: false, protocols: nil),
        Model(vendor: 0x2341, product: 0x0043, bcd: 0x0001, manufacturer: "Arduino (www.arduino.cc)", name: nil,
              hasSerial: true, protocols: nil),
        Model(vendor: 0x1c11, product: 0xb04d, bcd: 0x0100, manufacturer: "Input Club", name: "Keyboard - Ergodox",
              hasSerial: true, protocols: nil),
        Model(vendor: 0x0483, product: 0x5740, bcd: 0x0200, manufacturer: "STMicroelectronics",
              name: "STM32 Virtual ComPort", hasSerial: true, protocols: ["com.st.vcp"]),
        Model(vendor: 0x10c4, product: 0xea60, bcd: 0x0100, manufacturer: "Silicon Labs",
              name: "CP2102 USB to UART Bridge Controller", hasSerial: true, protocols: nil),
        Model(vendor: 0x046d, product: 0xc52b, bcd: 0x1211, manufacturer: "Logitech", name: "USB Receiver",
              hasSerial: false, protocols: nil),
    ]

    private enum Phase: Sendable {
        case start, running, done
    }

    package let configuration: Configuration
    private var random: SplitMix64
    private var world: [Device] = []
    private var buses: [Bus]
    private var queue: [HotplugEvent] = []
    private var emitted = 0
    private var sinceSnapshot = 0
    private var micros: Int64 = 0
    private var line = 0
    private var phase = Phase.start

    package init(_ configuration: Configuration) {
        precondition(configuration.devices >= 0 && configuration.buses >= 1 && configuration.events >= 0)
        precondition(configuration.devices <= configuration.buses * 126, "at most 126 devices per bus")
        self.configuration = configuration
        random = SplitMix64(seed: configuration.seed)
        buses = Array(repeating: Bus(), count: configuration.buses + 1)
        for i in 0..<configuration.devices {
            let model = Self.models[random.next(below: Self.models.count)]
            let bus = i % configuration.buses + 1
            let j = i / configuration.buses
            let port = j < 28 ? "\(bus)-\(j / 4 + 1).\(j % 4 + 1)" : "\(bus)-\(8 + j / 28).\(j / 4 % 7 + 1).\(j % 4 + 1)"
            let serial = model.hasSerial ? "SN\(String(random.next() & 0xFFFF_FFFF, radix: 16, uppercase: true))\(i)" : nil
            var d = AccessoryDescriptor(
                bus: bus, address: nil, port: port, vendor: model.vendor, product: model.product,
                bcdDevice: model.bcd, serial: serial, manufacturer: model.manufacturer, name: model.name,
                protocols: model.protocols)
            if random.chance(configuration.initiallyPresent) { d.address = buses[bus].allocate() }
            world.append(Device(descriptor: d))
        }
    }

    package init(seed: UInt64, events: Int, devices: Int) {
        self.init(Configuration(seed: seed, events: events, devices: devices))
    }

    /// The true device list now.
    private var truth: [AccessoryDescriptor] {
        world.filter(\.isPresent).map(\.descriptor)
    }

    package mutating func next() -> TraceRecord? {
        switch phase {
        case .done:
            return nil
        case .start:
            phase = .running
            return record(.snapshot(truth))
        case .running:
            if queue.isEmpty && configuration.snapshotInterval > 0 && sinceSnapshot >= configuration.snapshotInterval
                && emitted < configuration.events
            {
                sinceSnapshot = 0
                advance()
                return record(.snapshot(truth))
            }
            if queue.isEmpty {
                if emitted >= configuration.events {
                    phase = .done
                    advance()
                    return record(.snapshot(truth))
                }
                step()
            }
            emitted += 1
            sinceSnapshot += 1
            advance()
            return record(queue.removeFirst())
        }
    }

    private mutating func record(_ event: HotplugEvent) -> TraceRecord {
        line += 1
        return TraceRecord(t: Double(micros) / 1_000_000, event: event, line: line)
    }

    /// Moves the clock on by 1 ms to 2 s.
    private mutating func advance() {
        micros += 1000 + Int64(random.next(below: 2_000_000))
    }

    /// Queues the events of one step; never more than the events left to generate.
    private mutating func step() {
        let remaining = configuration.events - emitted
        let u = random.nextUnit()
        if remaining >= 2 && u < configuration.sleepProbability {
            queue.append(.sleep)
            for i in world.indices where world[i].isPresent && random.chance(configuration.silentChangeWhileAsleep) {
                unplug(i)
                if random.chance(0.5) { plug(i) }  // re-enumerated on resume, under a new address
            }
            queue.append(.wake)
        } else if u < configuration.sleepProbability + configuration.overflowProbability && !world.isEmpty {
            for _ in 0...random.next(below: 3) { toggle(random.next(below: world.count)) }
            queue.append(.overflow)
        } else if world.isEmpty {
            queue.append(.overflow)
        } else {
            let i = random.next(below: world.count)
            let wasPresent = world[i].isPresent
            queue.append(toggle(i))
            if wasPresent && remaining >= 2 && random.chance(configuration.replugProbability) {
                queue.append(toggle(i))
            }
        }
    }

    /// Plugs or unplugs device `i` and returns the event a monitor would report.
    @discardableResult
    private mutating func toggle(_ i: Int) -> HotplugEvent {
        if world[i].isPresent {
            let d = world[i].descriptor
            unplug(i)
            return .removed(DeviceRemoval(bus: d.bus, address: d.address, port: d.port))
        }
        plug(i)
        return .added(world[i].descriptor)
    }

    private mutating func plug(_ i: Int) {
        let bus = world[i].descriptor.bus
        world[i].descriptor.address = buses[bus].allocate()
    }

    private mutating func unplug(_ i: Int) {
        guard let address = world[i].descriptor.address else { return }
        buses[world[i].descriptor.bus].free(address)
        world[i].descriptor.address = nil
    }
}
