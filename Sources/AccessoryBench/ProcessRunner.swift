import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a whole process and measures it: wall time, CPU time and peak resident memory.
struct ProcessRunner {
    struct Measurement {
        var wall: Double
        var cpu: Double
        var maxRSSKiB: Int
        var status: Int32
    }

    /// Runs `argv` with stdout sent to `stdoutPath` (default /dev/null).
    static func measure(_ argv: [String], stdoutPath: String = "/dev/null", environment: [String: String]? = nil) -> Measurement {
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let start = monotonicSeconds()
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, &cargs, env)
        guard rc == 0 else {
            fatalError("cannot start \(argv[0]): \(String(cString: strerror(rc)))")
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let wall = monotonicSeconds() - start
        let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime)
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Measurement(wall: wall, cpu: cpu, maxRSSKiB: usage.ru_maxrss, status: exit)
    }

    /// The median (by wall time) of `runs` measurements of each command, taken in rounds:
    /// every round runs each command once, starting one further along the list each round,
    /// so a machine that speeds up or slows down during the bench, or a command that leaves
    /// the cache warm for the next, favours none of them.
    static func medians(runs: Int, _ commands: [[String]], stdoutPath: String = "/dev/null") -> [Measurement] {
        var all = Array(repeating: [Measurement](), count: commands.count)
        for round in 0..<max(runs, 1) {
            for k in 0..<commands.count {
                let i = (round + k) % commands.count
                all[i].append(measure(commands[i], stdoutPath: stdoutPath))
            }
        }
        return all.map { m in m.sorted { $0.wall < $1.wall }[m.count / 2] }
    }

    /// Everything a file descriptor gives until end of file, with plain read(2) (so that
    /// reading a /proc file allocates next to nothing).
    static func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return bytes
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    private static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
}
