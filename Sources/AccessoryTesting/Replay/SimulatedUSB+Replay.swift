extension SimulatedUSB {
    /// How the replay of `device`, a ``SimulatedAccessory/init(replaying:device:recording:pacing:)``,
    /// went so far: transfers answered as recorded, divergences, and needed recorded
    /// transfers nobody asked for. All zero for a device that replays nothing.
    public func replayReport(of device: SimulatedDevice) -> SimulatedReplayReport {
        device.accessory.replay?.report ?? SimulatedReplayReport(matched: 0, divergences: [], unconsumed: 0)
    }
}
