import AccessoryTestSupport
import Foundation
import Synchronization

/// Reads what a child process writes to a pipe: on the test's thread until a condition holds
/// (the rest stays in the pipe), then, once started, on a thread of its own until end of file.
final class PipeReader: Sendable {
    /// A duplicate of the pipe's read end, closed at end of file.
    private let fd: Int32
    private let state = Mutex<(data: Data, ended: Bool)>((Data(), false))

    init(_ pipe: Pipe) {
        fd = dup(pipe.fileHandleForReading.fileDescriptor)
    }

    /// Everything read so far.
    var data: Data { state.withLock { $0.data } }
    var isEnded: Bool { state.withLock { $0.ended } }

    /// Reads on this thread until `condition` holds on the text read so far, end of file, or
    /// `timeout`.
    /// - Returns: whether it held.
    func read(timeout: Duration = .seconds(10), until condition: (String) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(String(decoding: data, as: UTF8.self)) {
            let left = deadline - ContinuousClock.now
            guard left > .zero, !isEnded else { return false }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000, 1000))
            if poll(&poller, 1, max(milliseconds, 1)) > 0 { readOnce() }
        }
        return true
    }

    /// Reads the rest on a thread of its own, until end of file.
    func start() {
        Thread { [self] in
            while !isEnded { readOnce() }
        }.start()
    }

    /// Waits until the reader thread has seen end of file (the writer exited), up to `timeout`.
    @discardableResult
    func waitForEnd(timeout: Duration = .seconds(15)) -> Bool {
        pollUntil(timeout: timeout) { isEnded }
    }

    /// One read(2): appends what came, or marks end of file (and closes the descriptor).
    private func readOnce() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            state.withLock { $0.data.append(contentsOf: buffer[..<n]) }
        } else if n == 0 || errno != EINTR {
            state.withLock { $0.ended = true }
            close(fd)
        }
    }
}
