import AccessoryCapture
import AccessoryTraces
import Foundation
import Testing

/// Random conversations, written by USBCaptureWriter and read by USBCapture, come back as they
/// were: whole, through any buffer size, and cut anywhere.
@Suite("Capture round trips")
struct CapturePropertyTests {
    static let statuses: [Int32] = [0, 0, 0, 0, -32, -2, -104, -71, -110, -108, -75]
    static let endpoints: [(UInt8, USBCapture.Transfer.Kind)] = [
        (0x00, .control), (0x80, .control), (0x01, .bulk), (0x81, .bulk), (0x82, .bulk), (0x83, .interrupt), (0x04, .interrupt),
    ]

    /// A conversation drawn from `seed`: URBs in flight at once, completed out of order,
    /// failed, reused IDs, never completed; several devices on two buses.
    static func script(seed: UInt64) -> CaptureScript {
        var rng = SplitMix64(seed: seed)
        var script = CaptureScript()
        var inFlight: [(id: UInt64, bus: Int, device: Int, endpoint: UInt8, kind: USBCapture.Transfer.Kind, requested: Int, out: Int)] = []
        let count = rng.next(below: 60) + 1
        var nextID: UInt64 = 0xffff_9000_0000_0000
        for _ in 0..<count {
            if !inFlight.isEmpty && rng.chance(0.5) {
                let u = inFlight.remove(at: rng.next(below: inFlight.count))
                if rng.chance(0.05) {
                    script.events.append(.fail(id: u.id, bus: u.bus, device: u.device, endpoint: u.endpoint, kind: u.kind, status: -19))
                    continue
                }
                let status = statuses[rng.next(below: statuses.count)]
                let back = u.endpoint & 0x80 != 0 && status == 0 ? rng.bytes(rng.next(below: u.requested + 1)) : []
                script.events.append(.complete(
                    id: u.id, bus: u.bus, device: u.device, endpoint: u.endpoint, kind: u.kind, status: status, data: back,
                    actual: u.endpoint & 0x80 != 0 ? back.count : (status == 0 ? u.out : 0)))
            } else {
                let (endpoint, kind) = endpoints[rng.next(below: endpoints.count)]
                // IDs are reused once free, as the kernel's URB addresses are.
                let id = rng.chance(0.3) ? 0xffff_9000_0000_0000 + UInt64(rng.next(below: 3)) : { nextID += 0x100; return nextID }()
                let bus = 1 + rng.next(below: 2)
                guard !inFlight.contains(where: { $0.id == id && $0.bus == bus }) else { continue }
                let device = 1 + rng.next(below: 3)
                let requested = rng.next(below: 300)
                let out = endpoint & 0x80 == 0 ? rng.bytes(requested) : []
                var setup: USBCapture.Setup?
                if kind == .control {
                    setup = endpoint == 0x80 && rng.chance(0.3)
                        ? USBCapture.Setup(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: UInt16(requested))
                        : USBCapture.Setup(
                            requestType: (endpoint & 0x80) | 0x40, request: UInt8(rng.next(below: 256)), value: UInt16(rng.next(below: 65536)),
                            index: UInt16(rng.next(below: 65536)), length: UInt16(requested))
                }
                script.events.append(.submit(id: id, bus: bus, device: device, endpoint: endpoint, kind: kind, setup: setup, data: out, requested: requested))
                inFlight.append((id, bus, device, endpoint, kind, requested, out.count))
            }
        }
        return script
    }

    @Test("300 random conversations: read back equal, through buffers of random sizes, and cut at random bytes")
    func randomConversations() throws {
        let folder = try TemporaryFolder()
        var failures: [String] = []
        let empty = folder.path("empty.pcapng")
        _ = try USBCaptureWriter(path: empty)
        let headers = try FileManager.default.attributesOfItem(atPath: empty)[.size] as! Int
        for seed in UInt64(1)...300 {
            let script = Self.script(seed: seed)
            let path = folder.path("random-\(seed).pcapng")
            var ends: [Int] = []
            try script.write(to: path) { _ in
                ends.append(try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int)
            }
            let capture = try USBCapture(path: path)
            if !same(capture.contents, script.expected()) { failures.append("seed \(seed): read back differs") }
            var rng = SplitMix64(seed: seed ^ 0xc0ff_ee)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let chunked = try USBCapture(bytes: bytes, name: "chunked", chunkSize: 16 + rng.next(below: 400))
            if !same(chunked.contents, capture.contents) { failures.append("seed \(seed): chunked read differs") }
            // A cut anywhere after the headers keeps the records that end before it.
            let cut = headers + rng.next(below: bytes.count - headers + 1)
            let kept = ends.filter { $0 <= cut }.count
            let partial = try USBCapture(bytes: Array(bytes.prefix(cut)), name: "cut")
            if !same(partial.contents, script.expected(events: kept)) { failures.append("seed \(seed): cut at \(cut) keeps other transfers") }
            if (partial.truncation == nil) != (cut == headers || ends.contains(cut)) {
                failures.append("seed \(seed): cut at \(cut): truncation \(String(describing: partial.truncation))")
            }
            try FileManager.default.removeItem(atPath: path)
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(3))")
    }
}
