import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM as an async sequence, so a command can stop gracefully: stop the event
/// thread, close sessions, flush the trace, exit 0.
enum TerminationSignals {
    /// Starts catching SIGINT and SIGTERM (they no longer kill the process) and returns the
    /// stream of signal numbers.
    static func catchAll() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let queue = DispatchQueue(label: "accessoryctl.signals")
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { continuation.yield(sig) }
            source.resume()
            sources.append(source)
        }
        let keep = SourceBox(sources)
        continuation.onTermination = { _ in keep.cancel() }
        return stream
    }
}

/// Keeps the dispatch sources alive for as long as the stream is.
///
/// `@unchecked Sendable` is safe here: `sources` is set once in `init` and never mutated,
/// and `DispatchSource.cancel()` is thread-safe.
private final class SourceBox: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    func cancel() { sources.forEach { $0.cancel() } }
}
