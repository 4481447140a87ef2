#if canImport(Glibc)
import Glibc
#endif

/// Where ``MetricsServer`` listens: `HOST:PORT` as `--metrics` takes it. HOST is an IPv4
/// address, an IPv6 address in brackets (`[::1]`) or a name that resolves; PORT is 0...65535,
/// where 0 lets the kernel pick a free port (``MetricsServer/port`` says which).
public struct MetricsAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host as given, without brackets.
    public var host: String
    /// The port as given (0: any free port).
    public var port: UInt16

    /// An address from its parts (`host` without brackets).
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`.
    /// - Throws: ``MetricsAddressError`` naming what is wrong with it.
    public init(parsing text: String) throws(MetricsAddressError) {
        guard let colon = text.lastIndex(of: ":") else { throw .init(text, "it has no ':PORT'") }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), portText.count <= 5,
            let port = Int(portText), port <= 65_535
        else { throw .init(text, "the port must be a number from 0 to 65535") }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw .init(text, "an IPv6 host must be in brackets, as [::1]") }
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { throw .init(text, "only an IPv6 address goes in brackets") }
        } else {
            guard !host.isEmpty else { throw .init(text, "the host is missing (0.0.0.0 listens on every interface)") }
            guard !host.contains(":") else { throw .init(text, "an IPv6 host must be in brackets, as [::1]:9464") }
        }
        guard host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { throw .init(text, "the host has a space or a character that is not ASCII") }
        self.host = host
        self.port = UInt16(port)
    }

    /// `HOST:PORT`, with an IPv6 host in brackets.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Why a `--metrics` value is not a `HOST:PORT`.
public struct MetricsAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The value given.
    public var text: String
    /// What is wrong with it.
    public var problem: String

    init(_ text: String, _ problem: String) {
        self.text = text
        self.problem = problem
    }

    public var description: String { "'\(text)' is not a HOST:PORT: \(problem)" }
}
