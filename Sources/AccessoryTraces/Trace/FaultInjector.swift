import AccessoryCore
/// Damages a trace the way real monitors do — dropped, duplicated, reordered and delayed
/// events, and addresses that wrap after 127 — deterministically from a seed.
///
/// Only `add` and `remove` events are dropped, duplicated, reordered or delayed. Snapshots are
/// the OS truth: they are never dropped or moved, and no event moves across one. A reorder
/// swaps an event with the next one; a delay moves it 2 to 4 events later. `t` stays
/// non-decreasing: a record that moves later takes the time of the record before it.
/// With ``Configuration/wrapAddresses``, every address (in events and snapshots alike) is
/// renumbered by the same bijection of 2…127 that sends 2 to 122, so a kernel-like allocation
/// that starts low wraps past 127 early.
///
/// It streams: ``push(_:emit:)`` each record, then ``finish(emit:)``. At most a few records
/// are held back at any time.
package struct FaultInjector: Sendable {
    /// Fault probabilities (each from 0 to 1) and whether to renumber addresses.
    package struct Configuration: Hashable, Sendable, CustomStringConvertible {
        package var drop: Double
        package var duplicate: Double
        package var reorder: Double
        package var delay: Double
        package var wrapAddresses: Bool

        package init(
            drop: Double = 0, duplicate: Double = 0, reorder: Double = 0, delay: Double = 0,
            wrapAddresses: Bool = false
        ) {
            self.drop = drop
            self.duplicate = duplicate
            self.reorder = reorder
            self.delay = delay
            self.wrapAddresses = wrapAddresses
        }

        /// Parses `drop=P,dup=P,reorder=P,delay=P[,wrap]`. Any part may be left out; `wrap`
        /// may also be written `wrap=true` or `wrap=false`.
        /// - Throws: ``SpecError`` naming the part that is wrong.
        package init(parsing spec: String) throws(SpecError) {
            self.init()
            var seen: Set<String> = []
            for rawPart in spec.split(separator: ",", omittingEmptySubsequences: false) {
                let part = rawPart.trimmingSpaces
                if part.isEmpty {
                    if spec.trimmingSpaces.isEmpty { continue }
                    throw SpecError(spec: spec, reason: "empty entry between commas")
                }
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = pieces[0].trimmingSpaces
                let value = pieces.count > 1 ? pieces[1].trimmingSpaces : nil
                let name = key == "duplicate" ? "dup" : key
                guard ["drop", "dup", "reorder", "delay", "wrap"].contains(name) else {
                    throw SpecError(spec: spec, reason: "unknown fault '\(key)' (expected drop, dup, reorder, delay or wrap)")
                }
                guard seen.insert(name).inserted else {
                    throw SpecError(spec: spec, reason: "'\(key)' is given twice")
                }
                if name == "wrap" {
                    switch value {
                    case nil, "true", "1", "yes": wrapAddresses = true
                    case "false", "0", "no": wrapAddresses = false
                    case let v?: throw SpecError(spec: spec, reason: "'wrap' takes no value or true/false, got '\(v)'")
                    }
                    continue
                }
                guard let value else {
                    throw SpecError(spec: spec, reason: "'\(key)' needs a probability, as in \(key)=0.1")
                }
                guard let p = Double(value), p >= 0, p <= 1 else {
                    throw SpecError(spec: spec, reason: "probability for '\(key)' must be a number from 0 to 1, got '\(value)'")
                }
                switch name {
                case "drop": drop = p
                case "dup": duplicate = p
                case "reorder": reorder = p
                default: delay = p
                }
            }
        }

        /// The spec form, such as `drop=0.1,dup=0,reorder=0.05,delay=0,wrap`.
        package var description: String {
            "drop=\(drop),dup=\(duplicate),reorder=\(reorder),delay=\(delay)" + (wrapAddresses ? ",wrap" : "")
        }
    }

    /// A fault spec that cannot be parsed.
    package struct SpecError: Error, Hashable, Sendable, CustomStringConvertible {
        package var spec: String
        package var reason: String

        package var description: String { "invalid fault spec \"\(spec)\": \(reason)" }
    }

    package let configuration: Configuration
    private var random: SplitMix64
    /// Records held back, with the position after which each is released.
    private var held: [(due: Int, copies: Int, record: TraceRecord)] = []
    /// How many non-snapshot records have come in since the last snapshot.
    private var position = 0
    private var lastT = 0.0

    /// Where renumbered addresses start: address 2 becomes this one.
    static let wrapStart = 122

    package init(_ configuration: Configuration, seed: UInt64) {
        self.configuration = configuration
        self.random = SplitMix64(seed: seed)
    }

    /// Takes one record and emits those that are ready, in output order.
    package mutating func push(_ record: TraceRecord, emit: (TraceRecord) throws -> Void) rethrows {
        var record = record
        if configuration.wrapAddresses { record.event = Self.wrapped(record.event) }
        switch record.event {
        case .snapshot:
            try release(upTo: .max, emit)
            position = 0
            try output(record, copies: 1, emit)
        case .added, .removed:
            position += 1
            // Always draw the same numbers, so one fault's outcome never shifts another's.
            let drop = random.nextUnit(), dup = random.nextUnit()
            let reorder = random.nextUnit(), delay = random.nextUnit(), distance = random.next(below: 3)
            let copies = dup < configuration.duplicate ? 2 : 1
            if drop < configuration.drop {
                // dropped
            } else if reorder < configuration.reorder {
                held.append((position + 1, copies, record))
            } else if delay < configuration.delay {
                held.append((position + 2 + distance, copies, record))
            } else {
                try output(record, copies: copies, emit)
            }
            try release(upTo: position, emit)
        case .sleep, .wake, .overflow:
            position += 1
            try output(record, copies: 1, emit)
            try release(upTo: position, emit)
        }
    }

    /// Emits everything still held back, at the end of the input.
    package mutating func finish(emit: (TraceRecord) throws -> Void) rethrows {
        try release(upTo: .max, emit)
    }

    /// Runs a whole sequence of records through a new injector.
    package static func inject(
        _ configuration: Configuration, seed: UInt64, into records: some Sequence<TraceRecord>
    ) -> [TraceRecord] {
        var injector = FaultInjector(configuration, seed: seed)
        var out: [TraceRecord] = []
        for record in records { injector.push(record) { out.append($0) } }
        injector.finish { out.append($0) }
        return out
    }

    private mutating func release(upTo due: Int, _ emit: (TraceRecord) throws -> Void) rethrows {
        while !held.isEmpty {
            var next = -1
            for i in held.indices where held[i].due <= due && (next < 0 || held[i].due < held[next].due) {
                next = i
            }
            guard next >= 0 else { return }
            let entry = held.remove(at: next)
            try output(entry.record, copies: entry.copies, emit)
        }
    }

    private mutating func output(_ record: TraceRecord, copies: Int, _ emit: (TraceRecord) throws -> Void) rethrows {
        var record = record
        record.t = max(record.t, lastT)
        lastT = record.t
        for _ in 0..<copies { try emit(record) }
    }

    /// The renumbering of 2…127 that sends 2 to ``wrapStart``; 1 (the root hub) stays.
    static func wrap(_ address: Int) -> Int {
        address < 2 || address > 127 ? address : (address - 2 + wrapStart - 2) % 126 + 2
    }

    static func wrapped(_ event: HotplugEvent) -> HotplugEvent {
        switch event {
        case .added(var d):
            d.address = d.address.map(wrap)
            return .added(d)
        case .removed(var r):
            r.address = r.address.map(wrap)
            return .removed(r)
        case .snapshot(let devices):
            return .snapshot(devices.map { d in
                var d = d
                d.address = d.address.map(wrap)
                return d
            })
        case .sleep, .wake, .overflow:
            return event
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
