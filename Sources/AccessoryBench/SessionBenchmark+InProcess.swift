import AccessoryCore
import AccessoryKit
import Foundation

/// The in-process echoes that ``SessionBenchmark`` times, each through the manager's session
/// API, returning what it moved and the CPU it took.
extension SessionBenchmark {
    /// Echoes `data` one transfer at a time: write `chunk` bytes, read them back, repeat.
    static func echoSync(_ manager: AccessoryManager, _ accessory: Accessory, _ data: [UInt8], chunk: Int) async throws -> Sample {
        let pieces = stride(from: 0, to: data.count, by: chunk).map { Array(data[$0..<min($0 + chunk, data.count)]) }
        let options = AccessorySession.Options(readsInFlight: 1, writesInFlight: 1, transferSize: max(chunk, 512))
        return try await manager.withSession(to: accessory, protocol: "org.example.loopback", name: "bench-sync", options: options) { session in
            let (t0, c0) = (ProcessRunner.monotonicSeconds(), cpuSeconds())
            var offset = 0
            for piece in pieces {
                try await session.write(piece)
                var got = 0
                while got < piece.count {
                    guard let back = try await session.read() else { throw Failure(description: "the session closed") }
                    guard offset + got + back.count <= data.count, Self.same(back, data, at: offset + got) else {
                        throw Failure(description: "data mismatch at byte \(offset + got)")
                    }
                    got += back.count
                }
                offset += piece.count
            }
            return Sample(bytes: data.count, seconds: ProcessRunner.monotonicSeconds() - t0, cpu: cpuSeconds() - c0, transfers: pieces.count)
        }
    }

    /// Echoes `data` with one-transfer calls: `transferOut(0x01, chunk)` then
    /// `transferIn(0x81, length: chunk)` until the chunk is back, repeat.
    static func echoCalls(_ manager: AccessoryManager, _ accessory: Accessory, _ data: [UInt8], chunk: Int) async throws -> Sample {
        let pieces = stride(from: 0, to: data.count, by: chunk).map { Array(data[$0..<min($0 + chunk, data.count)]) }
        return try await manager.withSession(to: accessory, protocol: "org.example.loopback", name: "bench-calls") { session in
            let (t0, c0) = (ProcessRunner.monotonicSeconds(), cpuSeconds())
            var offset = 0
            for piece in pieces {
                try await session.transferOut(0x01, piece, timeout: .seconds(5))
                var got = 0
                while got < piece.count {
                    let back = try await session.transferIn(0x81, length: piece.count - got, timeout: .seconds(5))
                    guard offset + got + back.count <= data.count, Self.same(back, data, at: offset + got) else {
                        throw Failure(description: "data mismatch at byte \(offset + got)")
                    }
                    got += back.count
                }
                offset += piece.count
            }
            return Sample(bytes: data.count, seconds: ProcessRunner.monotonicSeconds() - t0, cpu: cpuSeconds() - c0, transfers: pieces.count)
        }
    }

    /// Reads until `data` has come back, checking every byte; returns how many came back.
    static func readBack(_ data: [UInt8], from session: AccessorySession) async throws -> Int {
        var offset = 0
        while offset < data.count {
            guard let back = try await session.read() else { break }
            guard offset + back.count <= data.count, Self.same(back, data, at: offset) else {
                throw Failure(description: "data mismatch at byte \(offset)")
            }
            offset += back.count
        }
        return offset
    }

    /// Echoes `data` with `depth` transfers in flight each way: one write of everything, and
    /// a reader running alongside.
    static func echoAsync(_ manager: AccessoryManager, _ accessory: Accessory, _ data: [UInt8], depth: Int, chunk: Int) async throws -> Sample {
        let options = AccessorySession.Options(readsInFlight: depth, writesInFlight: depth, transferSize: chunk)
        return try await manager.withSession(to: accessory, protocol: "org.example.loopback", name: "bench-async", options: options) { session in
            let (t0, c0) = (ProcessRunner.monotonicSeconds(), cpuSeconds())
            async let received = Self.readBack(data, from: session)
            try await session.write(data)
            let count = try await received
            guard count == data.count else { throw Failure(description: "echoed \(count) of \(data.count) bytes") }
            return Sample(
                bytes: data.count, seconds: ProcessRunner.monotonicSeconds() - t0, cpu: cpuSeconds() - c0,
                transfers: (data.count + chunk - 1) / chunk)
        }
    }

    /// Echoes `data` in writes of `writeSize` bytes, with the default options and a reader
    /// running alongside.
    static func echoWrites(_ manager: AccessoryManager, _ accessory: Accessory, _ data: [UInt8], writeSize: Int) async throws -> Sample {
        let pieces = stride(from: 0, to: data.count, by: writeSize).map { Array(data[$0..<min($0 + writeSize, data.count)]) }
        return try await manager.withSession(to: accessory, protocol: "org.example.loopback", name: "bench-writes") { session in
            let (t0, c0) = (ProcessRunner.monotonicSeconds(), cpuSeconds())
            async let received = Self.readBack(data, from: session)
            for piece in pieces { try await session.write(piece) }
            let count = try await received
            guard count == data.count else { throw Failure(description: "echoed \(count) of \(data.count) bytes") }
            return Sample(
                bytes: data.count, seconds: ProcessRunner.monotonicSeconds() - t0, cpu: cpuSeconds() - c0, transfers: pieces.count)
        }
    }
}
