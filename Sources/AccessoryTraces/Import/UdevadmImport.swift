import AccessoryCore
/// What ``UdevadmImporter`` made of one `udevadm monitor` log.
public struct UdevadmImport: Hashable, Sendable {
    /// The USB device `add` and `remove` events, each once, in log order.
    public var records: [TraceRecord]
    /// What was tolerated, such as lines that are not `udevadm monitor` output.
    public var warnings: [TraceWarning]
    /// How many non-blank lines were not recognized and skipped.
    public var skippedLines: Int

    package init(records: [TraceRecord], warnings: [TraceWarning] = [], skippedLines: Int = 0) {
        self.records = records
        self.warnings = warnings
        self.skippedLines = skippedLines
    }
}
