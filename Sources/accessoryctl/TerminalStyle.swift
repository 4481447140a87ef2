#if canImport(Glibc)
import Glibc
#endif

/// ANSI colours, only on a terminal and only when `NO_COLOR` is not set (no-color.org).
struct TerminalStyle: Sendable {
    let enabled: Bool

    init(fd: Int32) {
        enabled = isatty(fd) == 1 && getenv("NO_COLOR") == nil
    }

    func green(_ s: String) -> String { wrap(s, "32") }
    func red(_ s: String) -> String { wrap(s, "31") }
    func yellow(_ s: String) -> String { wrap(s, "33") }
    func dim(_ s: String) -> String { wrap(s, "2") }
    func bold(_ s: String) -> String { wrap(s, "1") }

    private func wrap(_ s: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s
    }
}
