import AccessoryCore
import Foundation
import Testing
@testable import AccessoryCore

/// The registry's keyed hashes: keyed per process, so that no trace or log can choose keys
/// that collide, and spread on inputs built to share their low bits.
@Suite("Table hash")
struct TableHashTests {
    static let probeVariable = "ACCESSORY_TABLEHASH_PROBE"

    /// In a child process (``probeVariable`` set): prints the hashes of fixed keys under a
    /// fixed table seed. Otherwise: runs itself twice and checks that the two processes'
    /// hashes differ, so an input prepared against one process says nothing about another.
    @Test("The hash is keyed per process: the same key under the same table seed hashes differently in two processes")
    func keyedPerProcess() throws {
        if ProcessInfo.processInfo.environment[Self.probeVariable] != nil {
            print("tablehash:", TableHash.word(7, seed: 4096), TableHash.word(0x1209_0001, "SN1", seed: 4096))
            return
        }
        func probe() throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["--testing-library", "swift-testing", "--filter", "TableHashTests/keyedPerProcess"]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.probeVariable] = "1"
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("tablehash:") }, "\(output)")
            return String(line)
        }
        let (first, second) = (try probe(), try probe())
        #expect(first != second, "\(first) in both processes")
        // Within one process the hash is a function of key and seed, as Dictionary needs.
        #expect(TableHash.word(7, seed: 4096) == TableHash.word(7, seed: 4096))
        #expect(TableHash.word(1, "SN1", seed: 4096) == TableHash.word(1, "SN1", seed: 4096))
    }

    /// Families of keys that differ only in chosen bits (letter case, bit 6 of every byte, the
    /// high bits of digits), as a hostile serial list would: under one table seed, 100,000 of
    /// them fill 2^18 buckets about as random keys would (expected largest bucket: 6 to 8).
    @Test("Connection IDs and ports hash through the table hash, not SipHash")
    func keysUseTheTableHash() {
        #expect(ConnectionID(rawValue: 7).hashValue == TableHash.word(7, seed: 0))
        #expect(PortKey(bus: 2, port: "2-1.4").hashValue == TableHash.word(2, "2-1.4", seed: 0))
    }

    @Test("Keys that differ only in chosen bits spread over a table's buckets like random keys")
    func structuredKeysSpread() {
        func family(_ choices: [UInt8], positions: Int, prefix: String) -> [String] {
            (0..<100_000).map { n in
                var n = n
                var text = prefix
                for _ in 0..<positions {
                    text.unicodeScalars.append(Unicode.Scalar(choices[n % choices.count]))
                    n /= choices.count
                }
                return text
            }
        }
        let families = [
            family([0x41, 0x61], positions: 17, prefix: "SN"),
            family([0x30, 0x70], positions: 17, prefix: ""),
            family([0x31, 0x71, 0x51, 0x11], positions: 9, prefix: "port-1-"),
            (0..<100_000).map { String(repeating: "A", count: $0 % 40) + String($0 / 40) },
        ]
        for (index, keys) in families.enumerated() {
            #expect(Set(keys).count == keys.count)
            for seed in [0, 4096, 0x7f12_3456_7890] {
                var buckets = [UInt8](repeating: 0, count: 1 << 18)
                var largest: UInt8 = 0
                for key in keys {
                    let b = TableHash.word(0x1209_0001, key, seed: seed) & ((1 << 18) - 1)
                    buckets[b] &+= 1
                    largest = max(largest, buckets[b])
                }
                #expect(largest <= 14, "family \(index), seed \(seed): a bucket holds \(largest) keys")
                let used = buckets.count { $0 > 0 }
                #expect(used > 80_000, "family \(index), seed \(seed): only \(used) buckets used")
            }
        }
    }

    @Test("Padding cannot collide: strings that differ only by trailing NULs or length hash apart")
    func lengths() {
        let keys = ["", "\0", "\0\0", "A", "A\0", "AAAAAAAA", "AAAAAAAA\0", "AAAAAAA"]
        let hashes = Set(keys.map { TableHash.word(1, $0, seed: 9) })
        #expect(hashes.count == keys.count)
    }
}
