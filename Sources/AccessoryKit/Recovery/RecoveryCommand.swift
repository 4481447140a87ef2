#if canImport(Glibc)
import Glibc
#endif

/// The ladder's `.command` step: the configured program (a network power strip, a relay),
/// run with the accessory's place in its environment: `ACCESSORY_PORT` (`1-1.4`),
/// `ACCESSORY_BUS` and, while the device is enumerated, `ACCESSORY_ADDRESS`. Exit status 0
/// means it did its job.
struct RecoveryCommand: Sendable {
    let arguments: [String]
    let port: String
    let bus: Int
    let address: Int?
    /// How long the program may run before it is killed.
    var limit = Duration.seconds(30)

    /// Starts the program, and polls for its end (no thread blocks in `waitpid`).
    /// - Throws: `.io` when it cannot start, exits non-zero, dies of a signal, or outlives
    ///   ``limit`` (then it is killed).
    func run() async throws(AccessoryError) {
        let operation = "recovery command"
        guard let program = arguments.first else { throw AccessoryError(.invalidArgument, "the command is empty", operation: operation) }
        var environment = Self.environment.filter { !$0.hasPrefix("ACCESSORY_") }
        environment += ["ACCESSORY_PORT=\(port)", "ACCESSORY_BUS=\(bus)"] + (address.map { ["ACCESSORY_ADDRESS=\($0)"] } ?? [])
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let spawned = posix_spawnp(&pid, program, nil, nil, argv, envp)
        guard spawned == 0 else {
            throw AccessoryError(.io, "cannot start \(program): \(String(cString: strerror(spawned)))", operation: operation)
        }
        let started = ContinuousClock.now
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR {
                throw AccessoryError(.io, "lost \(program): \(String(cString: strerror(errno)))", operation: operation)
            }
            if ContinuousClock.now - started > limit {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw AccessoryError(.io, "\(program) ran longer than \(limit) and was killed", operation: operation)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        // WIFEXITED / WEXITSTATUS, spelled out (they are macros).
        let signal = status & 0x7f
        if signal != 0 { throw AccessoryError(.io, "\(program) died of signal \(signal)", operation: operation) }
        let code = (status >> 8) & 0xff
        if code != 0 { throw AccessoryError(.io, "\(program) exited with status \(code)", operation: operation) }
    }

    /// This process's environment, as `NAME=value` strings.
    private static var environment: [String] {
        var result: [String] = []
        var p = environ
        while let entry = p.pointee {
            result.append(String(cString: entry))
            p += 1
        }
        return result
    }
}
