extension RecoveryPolicy {
    /// Why command-line recovery options were refused, in words for the command's user.
    public struct OptionError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The message, naming the option and what it accepts.
        public let description: String
    }

    /// The policy that the options `--recover`, `--recover-up-to STEP` and
    /// `--recover-vanished SECONDS` ask for, as `accessoryctl watch` and the device plugin
    /// spell them: `nil` without `--recover`.
    /// - Throws: ``OptionError`` when a refinement comes without `recover`, when `upTo` names
    ///   no step of the ladder up to a power cycle, or when `vanishedSeconds` is not more
    ///   than 0 and at most 86,400.
    public static func fromOptions(
        recover: Bool, upTo: String?, vanishedSeconds: Double?
    ) throws(OptionError) -> RecoveryPolicy? {
        guard recover else {
            if upTo != nil || vanishedSeconds != nil {
                throw OptionError(description: "--recover-up-to and --recover-vanished need --recover")
            }
            return nil
        }
        var step = RecoveryStep.powerCycle
        if let upTo {
            let steps = RecoveryStep.ladder(upTo: .powerCycle)
            guard let named = RecoveryStep(name: upTo), steps.contains(named) else {
                throw OptionError(description: "--recover-up-to must be one of \(steps.map(\.name).joined(separator: ", ")), not '\(upTo)'")
            }
            step = named
        }
        var vanishedFor: Duration?
        if let vanishedSeconds {
            guard vanishedSeconds.isFinite, vanishedSeconds > 0, vanishedSeconds <= 86_400 else {
                throw OptionError(description: "--recover-vanished must be more than 0 and at most 86400 seconds")
            }
            vanishedFor = .milliseconds(Int64((vanishedSeconds * 1000).rounded()))
        }
        return RecoveryPolicy(upTo: step, vanishedFor: vanishedFor)
    }
}
