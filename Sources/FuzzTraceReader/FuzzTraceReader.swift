import AccessoryCore
import AccessoryTraces
import FuzzSupport

/// libFuzzer entry point: any bytes, read as a trace, must give records or a TraceError,
/// never a crash or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTraceReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard var reader = try? TraceReader(bytes: bytes, name: "fuzz") else { return 0 }
    var replayer = TracePlayback()
    while true {
        guard let record = try? reader.next() else { break }
        _ = replayer.apply(record)
        _ = record.jsonLine  // what we read, we can write
    }
    _ = replayer.finish()
    return 0
}

@main
enum FuzzTraceReaderMain {
    static func main() { fuzzMain(fuzzTraceReader) }
}
