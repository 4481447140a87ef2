import Foundation

/// The fixtures that ship with the package, under `Tests/Fixtures`: generated traces and
/// hand-written logs and recordings of the project's own making.
public enum Fixtures {
    public static let root = SharedFolder.packageRoot.appendingPathComponent("Tests/Fixtures")
    public static let hotplugLogs = root.appendingPathComponent("hotplug-logs")
    public static let recordings = root.appendingPathComponent("usb-recordings")

    /// The path of a fixture, such as `hotplug-logs/lsusb.txt`.
    public static func path(_ name: String) -> String { root.appendingPathComponent(name).path }

    /// The files of a fixture folder (or a corpus folder), sorted, as full paths.
    public static func files(in folder: URL, suffix: String = "") -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted().map { folder.appendingPathComponent($0).path }
    }
}
