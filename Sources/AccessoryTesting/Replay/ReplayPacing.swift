/// When a replayed device (``SimulatedAccessory/init(replaying:device:recording:pacing:)``)
/// answers each transfer.
public enum ReplayPacing: Sendable, Hashable {
    /// At once: the test runs as fast as the code under test.
    case immediate
    /// After the transfer's recorded duration (submission to completion), on the virtual
    /// clock: the test moves it with ``SimulatedUSB/advance(by:)``.
    case recorded
}
