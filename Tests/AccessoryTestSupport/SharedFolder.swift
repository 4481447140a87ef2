import Foundation
import Testing

/// The team's `../shared` folder beside the package: third-party recordings and logs
/// (`corpus/`), the contract documents and the contract checkers (`tools/`). It is not shipped
/// with the package, so every test that needs it is skipped, with a reason, where it is absent.
public enum SharedFolder {
    /// The package root (two levels above this file's folder).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// `../shared`, or `$ACCESSORY_SHARED` when set.
    public static let root: URL = {
        if let path = ProcessInfo.processInfo.environment["ACCESSORY_SHARED"] { return URL(fileURLWithPath: path) }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
    }()

    public static let corpus = root.appendingPathComponent("corpus")
    public static let recordings = corpus.appendingPathComponent("usb-recordings")
    public static let hotplugLogs = corpus.appendingPathComponent("hotplug-logs")
    public static let tools = root.appendingPathComponent("tools")
    /// Real usbmon captures of third-party devices (`captures/NAME/*.pcapng`).
    public static let captures = root.appendingPathComponent("captures")

    public static var hasCorpus: Bool { isDirectory(recordings) && isDirectory(hotplugLogs) }
    public static var hasTools: Bool {
        FileManager.default.fileExists(atPath: tools.appendingPathComponent("check-replay.py").path)
            && FileManager.default.fileExists(atPath: tools.appendingPathComponent("check-list.py").path)
    }
    public static var hasCaptures: Bool { !captureFiles.isEmpty }
    /// Every `*.pcapng` and `*.pcap` one folder below `captures`, sorted, as full paths.
    public static var captureFiles: [String] {
        Fixtures.files(in: captures).flatMap { folder in
            Fixtures.files(in: URL(fileURLWithPath: folder)).filter { $0.hasSuffix(".pcapng") || $0.hasSuffix(".pcap") }
        }
    }
    public static var hasContracts: Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent("TRACE-FORMAT.md").path) }

    private static func isDirectory(_ url: URL) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &directory) && directory.boolValue
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test where `../shared/corpus` is absent, saying so.
    public static var needsCorpus: Self {
        .enabled(if: SharedFolder.hasCorpus, "needs ../shared/corpus (third-party recordings, not shipped with the package)")
    }
    /// Skips a test where the contract checkers in `../shared/tools` are absent, saying so.
    public static var needsContractTools: Self {
        .enabled(if: SharedFolder.hasTools, "needs ../shared/tools (the team's contract checkers, not shipped with the package)")
    }
    /// Skips a test where the real captures in `../shared/captures` are absent, saying so.
    public static var needsCaptures: Self {
        .enabled(if: SharedFolder.hasCaptures, "needs ../shared/captures (third-party usbmon captures, not shipped with the package)")
    }
    /// Skips a test where the contract documents in `../shared` are absent, saying so.
    public static var needsContracts: Self {
        .enabled(if: SharedFolder.hasContracts, "needs ../shared/TRACE-FORMAT.md (the team's contract, not shipped with the package)")
    }
}
