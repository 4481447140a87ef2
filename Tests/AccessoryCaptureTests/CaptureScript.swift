import AccessoryCapture
import Foundation
import Synchronization

/// A conversation to record: events in order, written with USBCaptureWriter one clock step
/// apart, and, worked out on its own, what a reader must make of them.
struct CaptureScript {
    typealias Kind = USBCapture.Transfer.Kind

    enum Event {
        case submit(id: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: Kind, setup: USBCapture.Setup?, data: [UInt8], requested: Int)
        case complete(id: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: Kind, status: Int32, data: [UInt8], actual: Int)
        case fail(id: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: Kind, status: Int32)
    }

    var events: [Event] = []
    /// The clock's time at the first record, and between records.
    static let start = Duration.seconds(1_700_000_000) + .nanoseconds(123_456_789)
    static let step = Duration.microseconds(125)

    /// Appends a submission and its completion.
    mutating func transfer(
        _ id: UInt64, bus: Int = 1, device: Int = 4, endpoint: UInt8, kind: Kind, setup: USBCapture.Setup? = nil,
        out: [UInt8] = [], requested: Int? = nil, status: Int32 = 0, back: [UInt8] = []
    ) {
        let isIn = endpoint & 0x80 != 0
        events.append(.submit(id: id, bus: bus, device: device, endpoint: endpoint, kind: kind, setup: setup, data: out, requested: requested ?? out.count))
        events.append(.complete(id: id, bus: bus, device: device, endpoint: endpoint, kind: kind, status: status, data: back, actual: isIn ? back.count : (status == 0 ? out.count : 0)))
    }

    /// A clock that steps by ``step`` at every reading.
    final class StepClock: Sendable {
        private let readings = Atomic<Int64>(0)
        func now() -> Duration {
            let n = readings.add(1, ordering: .relaxed).oldValue
            return CaptureScript.start + CaptureScript.step * Int(n)
        }
    }

    /// Writes the events to `path`; `afterEach` runs after each (with the writer still open).
    func write(to path: String, afterEach: (Int) throws -> Void = { _ in }) throws {
        let clock = StepClock()
        let writer = try USBCaptureWriter(path: path, now: { clock.now() })
        for (i, event) in events.enumerated() {
            switch event {
            case let .submit(id, bus, device, endpoint, kind, setup, data, requested):
                try writer.submit(urbID: id, bus: bus, device: device, endpoint: endpoint, kind: kind, setup: setup, data: data[...], requestedLength: requested)
            case let .complete(id, bus, device, endpoint, kind, status, data, actual):
                try writer.complete(urbID: id, bus: bus, device: device, endpoint: endpoint, kind: kind, status: status, data: data[...], actualLength: actual)
            case let .fail(id, bus, device, endpoint, kind, status):
                try writer.fail(urbID: id, bus: bus, device: device, endpoint: endpoint, kind: kind, status: status)
            }
            try afterEach(i)
        }
    }

    /// The devices and their transfers that the first `count` events make, in order of first appearance.
    func expected(events count: Int? = nil) -> [(device: USBCapture.Device, transfers: [USBCapture.Transfer])] {
        var result: [(device: USBCapture.Device, transfers: [USBCapture.Transfer])] = []
        var pending: [String: (Int, Int)] = [:]
        func device(_ bus: Int, _ address: Int) -> Int {
            if let i = result.firstIndex(where: { $0.device.bus == bus && $0.device.address == address }) { return i }
            result.append((USBCapture.Device(bus: bus, address: address), []))
            return result.count - 1
        }
        for (i, event) in events.prefix(count ?? events.count).enumerated() {
            let time = Self.step * i
            switch event {
            case let .submit(id, bus, address, endpoint, kind, setup, data, requested):
                let d = device(bus, address)
                pending["\(bus)/\(id)"] = (d, result[d].transfers.count)
                result[d].transfers.append(
                    USBCapture.Transfer(
                        kind: kind, endpoint: endpoint, setup: kind == .control ? setup : nil, data: endpoint & 0x80 != 0 ? [] : data,
                        requestedLength: requested, length: endpoint & 0x80 != 0 ? 0 : requested, status: nil, submitted: time,
                        completed: nil, urbID: id))
            case let .complete(id, bus, address, endpoint, _, status, data, actual):
                _ = device(bus, address)
                guard let (d, t) = pending.removeValue(forKey: "\(bus)/\(id)") else { continue }
                result[d].transfers[t].status = status
                result[d].transfers[t].completed = time
                if endpoint & 0x80 != 0 {
                    result[d].transfers[t].data = data
                    result[d].transfers[t].length = actual
                }
                let s = result[d].transfers[t].setup
                if s?.requestType == 0x80, s?.request == 6, s.map({ $0.value >> 8 }) == 1, status == 0, data.count >= 12, data[1] == 1,
                    result[d].device.vendor == nil
                {
                    result[d].device.vendor = UInt16(data[8]) | UInt16(data[9]) << 8
                    result[d].device.product = UInt16(data[10]) | UInt16(data[11]) << 8
                }
            case let .fail(id, bus, address, _, _, status):
                _ = device(bus, address)
                guard let (d, t) = pending.removeValue(forKey: "\(bus)/\(id)") else { continue }
                result[d].transfers[t].status = status
                result[d].transfers[t].completed = time
            }
        }
        return result
    }

    /// What tshark must show per record: URB type, `usb.urb_len` and `usb.data_len`.
    var tsharkRows: [String] {
        events.map { event in
            switch event {
            case let .submit(_, _, _, endpoint, _, _, data, requested):
                "'S' \(requested) \(endpoint & 0x80 != 0 ? 0 : data.count)"
            case let .complete(_, _, _, endpoint, _, _, data, actual):
                "'C' \(actual) \(endpoint & 0x80 != 0 ? data.count : 0)"
            case .fail:
                "'E' 0 0"
            }
        }
    }
}

extension USBCapture {
    /// Every device with its transfers, for comparing with ``CaptureScript/expected(events:)``.
    var contents: [(device: USBCapture.Device, transfers: [USBCapture.Transfer])] {
        devices.map { ($0, transfers(of: $0)) }
    }
}

/// Whether two lists of devices with transfers are equal.
func same(_ a: [(device: USBCapture.Device, transfers: [USBCapture.Transfer])], _ b: [(device: USBCapture.Device, transfers: [USBCapture.Transfer])]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.device == $1.device && $0.transfers == $1.transfers }
}
