import AccessoryCore
import FuzzSupport

/// libFuzzer entry point: hostile USB descriptors (wrong lengths, overlong strings, invalid
/// UTF-16, zero endpoints, loops) must parse or fail with a USBDescriptorError.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDescriptorParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? USBDescriptorParser.parse(sysfsDescriptors: bytes)
    _ = try? USBDescriptorParser.parseDevice(bytes)
    _ = USBStringDescriptor.decode(bytes)
    _ = USBStringDescriptor.languageIDs(bytes)
    return 0
}

@main
enum FuzzDescriptorParserMain {
    static func main() { fuzzMain(fuzzDescriptorParser) }
}
