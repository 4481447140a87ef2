import AccessoryCapture
import Foundation

/// Cuts one usbmon packet's data in a copy of a pcapng capture, as a snap length does
/// (`tshark -s`, usbmon's own cap): the packet keeps its first bytes, its original length and
/// usbmon's `length` field stay, and its captured lengths shrink. For tests that make cut
/// captures at runtime from real ones (which are never copied into the package).
public enum CaptureCutter {
    /// `bytes` (a little-endian pcapng file of link type 220) with the data of the usbmon
    /// event at block offset `offset` cut to its first `keep` bytes; its options are dropped.
    public static func cut(_ bytes: [UInt8], blockAt offset: Int, keep: Int) -> [UInt8] {
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func put(_ v: Int, _ at: Int, in b: inout [UInt8]) { for i in 0..<4 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) } }
        precondition(u32(offset) == 6, "not an enhanced packet block at \(offset)")
        let length = u32(offset + 4)
        let packet = offset + 28
        var block = Array(bytes[offset..<(packet + 64 + keep)])
        put(64 + keep, 20, in: &block)  // the block's captured length
        put(keep, 28 + 36, in: &block)  // usbmon's len_cap
        while block.count % 4 != 0 { block.append(0) }
        block += [0, 0, 0, 0]
        put(block.count, 4, in: &block)
        put(block.count, block.count - 4, in: &block)
        return Array(bytes[..<offset]) + block + Array(bytes[(offset + length)...])
    }

    /// The capture at `path` with the data of transfer `index` of `device` cut to `keep`
    /// bytes: an IN's at its completion, an OUT's at its submission. The copy is `bytes`.
    public static func cut(path: String, device: USBCapture.Device, transfer index: Int, keep: Int) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let capture = try USBCapture(path: path)
        let transfers = capture.transfers(of: device)
        let target = transfers[index]
        // Its submission is the k-th of its URB ID on the device; an IN's data is in the
        // completion of that ID that follows.
        let k = transfers[..<index].filter { $0.urbID == target.urbID }.count
        var reader = USBMonReader(bytes: bytes, name: path)
        var submissions = 0
        while let record = try reader.next() {
            let h = record.header
            guard Int(h.bus) == device.bus, Int(h.device) == device.address, h.urbID == target.urbID else { continue }
            if h.event == .submit {
                submissions += 1
                if submissions == k + 1 && !target.isIn { return cut(bytes, blockAt: record.offset, keep: keep) }
            } else if h.event == .complete && submissions == k + 1 && target.isIn {
                return cut(bytes, blockAt: record.offset, keep: keep)
            }
        }
        throw CocoaError(.fileReadCorruptFile)
    }
}
