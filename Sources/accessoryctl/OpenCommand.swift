import AccessoryCore
import AccessoryKit
import ArgumentParser
import AccessoryLocking
import Dispatch
import Glibc
import ProcessSignals
import Synchronization

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a session with an accessory: standard input goes to it, what it sends goes to standard output.",
        discussion: """
            TARGET is VID:PID[:SERIAL] in hexadecimal (1209:0001, 1209:0001:SN1) or a port chain \
            (1-1.4). The protocol picks the interface, as an iOS app's EASession does: a \
            vendor-specific interface whose string descriptor is the protocol name, or one that a \
            rule of --protocols names. A device whose interfaces carry no string opens with \
            --interface N instead (see 'accessoryctl describe' for its interfaces).

            After standard input ends, the command keeps reading until the accessory has been \
            quiet for --idle-timeout seconds, then exits 0 (like nc -q). If the accessory goes away \
            it exits 1 at once, saying why. If the --capture file cannot be written (a full disk), \
            the session goes on to its end; the file is cut back to its last whole record and the \
            command then exits 74, naming the file and the error. SIGINT and SIGTERM close the session cleanly (the \
            interface is released and a detached kernel driver attached again) and exit 0. When \
            the reader of standard output goes away, the command ends quietly.

            Examples:
              echo hello | accessoryctl open 1209:0001 --protocol org.example.loopback
              accessoryctl open 1209:0001:SN1 --protocol org.example.loopback --progress < firmware.bin > reply.bin
              accessoryctl open 1-1.4 --protocol com.example.console --idle-timeout 0.2 --detach-kernel-driver
              accessoryctl open 06cb:00bd --interface 0 < request.bin
              accessoryctl open 06cb:00bd --protocols rules.json --protocol com.example.reader
            """)

    @Argument(help: "The accessory: VID:PID[:SERIAL] (hex) or a port chain such as 1-1.4.")
    var target: String

    @Option(name: .customLong("protocol"), help: "The protocol to open, such as org.example.loopback.")
    var protocolName: String?

    @Option(name: .customLong("interface"), help: "Open this interface (bInterfaceNumber, 0–255) instead of a protocol's.")
    var interfaceNumber: UInt8?

    @Option(help: "A name for the session, in logs and in 'busy' messages.")
    var name: String = "accessoryctl open"

    @Flag(help: "Show bytes sent and received and the throughput on stderr.")
    var progress = false

    @Option(help: "After standard input ends, exit once the accessory has sent nothing for this many seconds (fractions allowed).")
    var idleTimeout: Double = 1

    @Flag(help: "Detach a kernel driver bound to the interface; it is attached again on exit.")
    var detachKernelDriver = false

    @Option(help: ArgumentHelp(
        "Record every transfer as a Linux usbmon capture (pcapng) that Wireshark and tshark read.", valueName: "file"))
    var capture: String?

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        _ = try Self.parse(target)
        guard (protocolName == nil) != (interfaceNumber == nil) else {
            throw ValidationError("give exactly one of --protocol NAME and --interface N")
        }
        try GlobalOptions.validateSeconds(idleTimeout, option: "--idle-timeout", allowsZero: true, atMost: 604_800)
    }

    func run() async throws {
        global.bootstrapLogging()
        OutputStream.ignoreSigpipe()
        let signals = TerminationSignals.catchAll()
        let target = try Self.parse(self.target)
        let manager = try await global.startManager(capturePath: capture)
        let accessory: Accessory
        do {
            accessory = try await manager.accessory(matching: target)
        } catch {
            note("error: \(error.message)")
            await manager.shutdown()
            throw ExitCode(1)
        }
        let session: AccessorySession
        do {
            let options = AccessorySession.Options(detachKernelDriver: detachKernelDriver)
            if let interfaceNumber {
                session = try await manager.openSession(to: accessory, interface: interfaceNumber, name: name, options: options)
            } else {
                session = try await manager.openSession(to: accessory, protocol: protocolName ?? "", name: name, options: options)
            }
        } catch {
            note("error: \(error.message)")
            await manager.shutdown()
            throw ExitCode(1)
        }

        let counters = Counters()
        let outcome = await Self.pump(
            session: session, idle: .milliseconds(Int64((idleTimeout * 1000).rounded())), signals: signals,
            counters: counters, progress: progress)
        await session.close()
        await manager.shutdown()
        if progress { counters.report(final: true) }
        switch outcome {
        case .failed(let error):
            note("error: \(error.message)")
            _ = CaptureFailure.report(manager)
            throw ExitCode(1)
        case .finished, .signalled, .stdoutClosed:
            if CaptureFailure.report(manager) != nil { throw CaptureFailure.exitCode }
        }
    }

    // MARK: Pumping

    enum Outcome: Sendable {
        /// Standard input ended and the accessory was quiet for the idle timeout.
        case finished
        case signalled
        /// The reader of standard output went away.
        case stdoutClosed
        case failed(AccessoryError)
    }

    /// Runs stdin → accessory, accessory → stdout, the idle timer and the signal watch until
    /// the first of them decides the outcome; then stops the others.
    static func pump(
        session: AccessorySession, idle: Duration, signals: AsyncStream<Int32>, counters: Counters, progress: Bool
    ) async -> Outcome {
        let (outcomes, decide) = AsyncStream.makeStream(of: Outcome.self, bufferingPolicy: .bufferingOldest(8))
        let quiet = QuietClock()
        let input = InputReader(fd: 0)

        let reader = Task {
            do throws(AccessoryError) {
                while let chunk = try await session.read() {
                    quiet.touch()
                    if !chunk.isEmpty {
                        guard writeAll(1, chunk) else {
                            decide.yield(.stdoutClosed)
                            return
                        }
                    }
                    counters.received.add(chunk.count, ordering: .relaxed)
                    quiet.touch()
                }
            } catch {
                if error.code != .cancelled { decide.yield(.failed(error)) }
            }
        }
        let writer = Task {
            do {
                for await chunk in input.chunks {
                    try await session.write(chunk)
                    counters.sent.add(chunk.count, ordering: .relaxed)
                    input.consumed()
                }
                guard !Task.isCancelled else { return }
                // Standard input ended: wait until the accessory has taken everything, then
                // until it has been quiet long enough.
                try await session.flush()
                quiet.touch()
                while true {
                    let due = quiet.last + idle
                    if ContinuousClock.now >= due { break }
                    try await Task.sleep(until: due, clock: .continuous)
                }
                decide.yield(.finished)
            } catch let error as AccessoryError {
                if error.code != .cancelled { decide.yield(.failed(error)) }
            } catch {
                // Cancelled while waiting.
            }
        }
        let watcher = Task {
            for await _ in signals {
                decide.yield(.signalled)
                return
            }
        }
        let reporter: Task<Void, Never>? = progress ? Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                counters.report(final: false)
            }
        } : nil

        var outcome = Outcome.finished
        for await first in outcomes {
            outcome = first
            break
        }
        writer.cancel()
        watcher.cancel()
        reporter?.cancel()
        reader.cancel()
        if case .signalled = outcome {
            // A stalled reader of standard output must not keep us from exiting.
        } else {
            await reader.value
        }
        return outcome
    }

    /// Writes all of `bytes` with write(2). Returns false when the reader has gone (EPIPE).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false  // EPIPE, or any other failure of standard output
                }
                offset += n
            }
            return true
        }
    }
}

extension OpenCommand {
    /// TARGET as the library reads it, or a usage error.
    static func parse(_ text: String) throws -> AccessoryTarget {
        do {
            return try AccessoryTarget(parsing: text)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Bytes moved, for --progress.
    final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        private let start = ContinuousClock.now
        private let tty = isatty(2) != 0

        func report(final: Bool) {
            let seconds = max((ContinuousClock.now - start) / .seconds(1), 1e-6)
            let out = sent.load(ordering: .relaxed)
            let back = received.load(ordering: .relaxed)
            let rate = Double(out + back) / seconds / 1e6
            let line = "sent \(Self.size(out)), received \(Self.size(back)), \(TextFormat.oneDecimal(seconds)) s, \(TextFormat.oneDecimal(rate)) MB/s"
            if tty {
                let text = "\r\u{1b}[K" + line + (final ? "\n" : "")
                _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
            } else {
                note(line)
            }
        }

        static func size(_ bytes: Int) -> String {
            bytes < 1 << 20 ? "\(bytes) B" : "\(TextFormat.oneDecimal(Double(bytes) / 1048576)) MiB"
        }
    }

    /// When the accessory last sent something (or standard input last ended).
    final class QuietClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        func touch() { instant.withLock { $0 = .now } }
        var last: ContinuousClock.Instant { instant.withLock { $0 } }
    }

    /// Reads standard input on a thread of its own (reads block) and hands chunks over,
    /// at most a few ahead of the writer, so memory stays bounded whatever the input size.
    final class InputReader: Sendable {
        let chunks: AsyncStream<[UInt8]>
        private let credits: DispatchSemaphore

        /// - Parameters:
        ///   - chunkSize: the largest chunk; what is readily available is gathered up to it.
        ///   - ahead: how many chunks may wait for the writer.
        init(fd: Int32, chunkSize: Int = 1 << 20, ahead: Int = 2) {
            let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
            // Starts at 0 and is signalled `ahead` times: libdispatch traps when a semaphore
            // is freed below its initial value, as this one is when input ends early.
            let credits = DispatchSemaphore(value: 0)
            for _ in 0..<ahead { credits.signal() }
            chunks = stream
            self.credits = credits
            DetachedThread.start {
                var buffer = [UInt8](repeating: 0, count: chunkSize)
                while true {
                    credits.wait()
                    let n = Self.gather(fd, &buffer)
                    guard n > 0 else {
                        continuation.finish()
                        return
                    }
                    continuation.yield(Array(buffer[..<n]))
                }
            }
        }

        /// The writer is done with one chunk.
        func consumed() { credits.signal() }

        /// Reads at least one byte (blocking), then whatever more is ready without blocking,
        /// up to the buffer's size. Returns 0 at end of input or on an error.
        private static func gather(_ fd: Int32, _ buffer: inout [UInt8]) -> Int {
            buffer.withUnsafeMutableBytes { b in
                var filled = 0
                while filled < b.count {
                    if filled > 0 {
                        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                        guard poll(&p, 1, 0) > 0 else { break }
                    }
                    let n = read(fd, b.baseAddress! + filled, b.count - filled)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    filled += n
                }
                return filled
            }
        }
    }
}
