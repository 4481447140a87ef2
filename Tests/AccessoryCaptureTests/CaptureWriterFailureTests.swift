import AccessoryCapture
import AccessoryTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// A writer on a disk that fills up: the first short or failed write cuts the file back to
/// its last whole record and ends the writing, the error is kept, and the file reads to its
/// end.
@Suite("Capture writer on a full disk")
struct CaptureWriterFailureTests {
    /// `writev(2)` on a disk with `space` bytes left: a write larger than what is left writes
    /// what fits (a short write), and the next fails with ENOSPC.
    final class Disk: Sendable {
        let left: Mutex<Int>
        init(space: Int) { left = Mutex(space) }

        var write: USBCaptureWriter.WriteVector {
            { [self] fd, vectors, count in
                left.withLock { left in
                    let wanted = (0..<Int(count)).reduce(0) { $0 + vectors[$1].iov_len }
                    guard left > 0 else {
                        errno = ENOSPC
                        return -1
                    }
                    var parts: [iovec] = []
                    var room = min(left, wanted)
                    for i in 0..<Int(count) where room > 0 {
                        parts.append(iovec(iov_base: vectors[i].iov_base, iov_len: min(room, vectors[i].iov_len)))
                        room -= parts.last!.iov_len
                    }
                    let n = writev(fd, parts, Int32(parts.count))
                    if n > 0 { left -= n }
                    return n
                }
            }
        }
    }

    static func size(_ path: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int }

    @Test("A short write, then ENOSPC: the file ends at its last whole record, the error is kept and thrown, nothing more is written", arguments: [0, 1, 50, 97])
    func fullDisk(spareBytes: Int) throws {
        let folder = try TemporaryFolder()
        let path = folder.path("full.pcapng")
        let disk = Disk(space: 1 << 20)
        let writer = try USBCaptureWriter(path: path, writeVector: disk.write)
        for id in 1...3 as ClosedRange<UInt64> {
            try writer.submit(urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, data: [1, 2, 3][...], requestedLength: 3)
            try writer.complete(urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, status: 0, actualLength: 3)
        }
        let whole = try Self.size(path)
        disk.left.withLock { $0 = spareBytes }  // the disk fills up: less than the next record
        #expect {
            try writer.submit(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, requestedLength: 512)
            try writer.complete(urbID: 4, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, status: 0, data: Array(repeating: 7, count: 100)[...])
        } throws: { error in
            let e = error as? USBCaptureError
            return e?.file == path && e?.reason.contains("No space left on device") == true
                && e?.reason.contains("the capture ends at its last whole record") == true
        }
        let failure = try #require(writer.failure)
        // Space comes back: nothing more is written, and every record says why.
        disk.left.withLock { $0 = 1 << 20 }
        #expect(throws: failure) {
            try writer.submit(urbID: 5, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, data: [9][...], requestedLength: 1)
        }
        #expect(throws: failure) { try writer.close() }
        let size = try Self.size(path)
        #expect(size <= whole + 160)  // at most the submission of URB 4 fitted whole
        let capture = try USBCapture(path: path)
        #expect(capture.truncation == nil)
        let transfers = capture.transfers(of: capture.devices[0])
        #expect(transfers.prefix(3).allSatisfy { $0.status == 0 && $0.data == [1, 2, 3] })
        #expect(transfers.count == (size > whole ? 4 : 3))
        #expect(!transfers.contains { $0.urbID == 5 })
    }

    @Test("A deferred completion is written with the next record, or at flush, in order")
    func deferred() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("deferred.pcapng")
        let writer = try USBCaptureWriter(path: path)
        let start = try Self.size(path)
        try writer.submit(urbID: 1, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, requestedLength: 8)
        let submitted = try Self.size(path)
        #expect(submitted > start)
        try writer.complete(urbID: 1, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, status: 0, data: [1, 2][...], deferred: true)
        #expect(try Self.size(path) == submitted)
        try writer.flush()
        #expect(try Self.size(path) > submitted)
        try writer.complete(urbID: 2, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, status: 0, data: [3][...], deferred: true)
        try writer.close()  // writes what was deferred, syncs and closes
        try writer.close()
        let transfers = try USBCapture(path: path).transfersOfDevice()
        #expect(transfers.map(\.data) == [[1, 2]])  // URB 2's completion has no submission: left out
        #expect(try USBCapture(path: path).truncation == nil)
        // After close, records are dropped without error.
        try writer.submit(urbID: 3, bus: 1, device: 4, endpoint: 0x81, kind: .bulk, requestedLength: 8)
        #expect(writer.failure == nil)
    }

    @Test("Deferred submissions, queued by many threads while others flush, are all written, each before its completion, with the bytes they had when queued")
    func deferredSubmissionsAcrossThreads() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("threads.pcapng")
        let writer = try USBCaptureWriter(path: path)
        let threads = 4
        let perThread = 200
        DispatchQueue.concurrentPerform(iterations: threads + 1) { t in
            if t == threads {
                // The writer thread's part: flushes while the others queue.
                for _ in 0..<(perThread / 2) { try? writer.flush() }
                return
            }
            for i in 0..<perThread {
                let id = UInt64(t * perThread + i + 1)
                var bytes: [UInt8] = [UInt8(t), UInt8(i & 0xff)]
                try? writer.submit(
                    urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, data: bytes[...], requestedLength: 2,
                    deferred: true)
                bytes[0] = 0xee  // the caller's array changes after the record was queued
                try? writer.complete(
                    urbID: id, bus: 1, device: 4, endpoint: 0x01, kind: .bulk, status: 0, actualLength: 2, deferred: i % 2 == 0)
            }
        }
        try writer.close()
        #expect(writer.failure == nil)
        let capture = try USBCapture(path: path)
        #expect(capture.truncation == nil)
        let transfers = try capture.transfersOfDevice()
        #expect(transfers.count == threads * perThread)  // a completion before its submission would be left out
        #expect(transfers.allSatisfy { $0.status == 0 && $0.data.count == 2 && $0.data[0] != 0xee })
        #expect(Set(transfers.map { [$0.data[0], $0.data[1]] }).count == threads * perThread)
    }
}
