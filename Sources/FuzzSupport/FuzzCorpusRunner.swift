import Foundation

/// A libFuzzer entry point: `LLVMFuzzerTestOneInput`.
public typealias FuzzEntry = @convention(c) (UnsafePointer<UInt8>, Int) -> Int32

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzEntry
) -> Int32
#endif

/// The `main` of a fuzz target. Built with `-sanitize=fuzzer -DFUZZING`, it hands over to
/// libFuzzer's driver (all libFuzzer flags work). Built normally, it runs the entry point once
/// per file named on the command line (directories are walked): a corpus or crash reproducers
/// replayed as a regression check.
public func fuzzMain(_ entry: FuzzEntry) -> Never {
    #if FUZZING
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, entry))
    #else
    var count = 0
    for path in CommandLine.arguments.dropFirst() {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            FileHandle.standardError.write(Data("no such file: \(path)\n".utf8))
            exit(1)
        }
        let files = isDirectory.boolValue
            ? ((try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 }
            : [path]
        for file in files.sorted() {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDir), !isDir.boolValue,
                let data = FileManager.default.contents(atPath: file) else { continue }
            let bytes = [UInt8](data) + [0]  // a valid pointer even for an empty file
            _ = bytes.withUnsafeBufferPointer { entry($0.baseAddress!, data.count) }
            count += 1
        }
    }
    print("ran \(count) inputs")
    exit(0)
    #endif
}
