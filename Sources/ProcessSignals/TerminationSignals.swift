import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM as an async sequence, so a program can stop gracefully: stop the event
/// thread, close sessions, flush the trace, exit 0. The process's signals are the program's to
/// take, not a library's, so this is a module of its own that `accessoryctl` and the device
/// plugin import, never AccessoryKit.
public enum TerminationSignals {
    /// Starts catching SIGINT and SIGTERM (they no longer kill the process) and returns the
    /// stream of signal numbers.
    public static func catchAll() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let queue = DispatchQueue(label: "termination-signals")
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { continuation.yield(sig) }
            source.resume()
            sources.append(source)
        }
        // The handler keeps the sources alive for as long as the stream is; a Mutex makes
        // the (non-Sendable) sources safe to hand to it.
        let keep = Mutex(sources)
        continuation.onTermination = { _ in keep.withLock { $0.forEach { $0.cancel() } } }
        return stream
    }
}
