import AccessoryCore
import AccessoryTraces
import FuzzSupport

/// libFuzzer entry point: any bytes, imported as a `udevadm monitor` log, give a trace or a
/// TraceError; whatever is imported replays.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUdevadmImporter(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let imported = try? UdevadmImporter().importLog(bytes: bytes, name: "fuzz") else { return 0 }
    var replayer = TracePlayback()
    for record in imported.records { _ = replayer.apply(record) }
    return 0
}

@main
enum FuzzUdevadmImporterMain {
    static func main() { fuzzMain(fuzzUdevadmImporter) }
}
