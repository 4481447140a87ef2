/// The HTTP/1.1 that ``MetricsServer`` speaks, without the socket: where a request head
/// ends, and the response to it. One request per connection (`Connection: close`).
enum MetricsHTTP {
    /// The exposition format's content type (text format 0.0.4).
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"
    /// The longest request head read; a longer one is answered 431.
    static let headLimit = 8192

    /// What the server does with a request head.
    enum Route: Equatable {
        /// `GET /metrics` (a query string allowed): the exposition.
        case metrics
        /// `HEAD /metrics`: its headers only.
        case metricsHead
        /// Anything else: this status line's code and reason, with a short text body.
        case status(Int, String)
    }

    /// Whether `bytes` hold a whole request head (up to its blank line).
    static func headIsComplete(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 3..<bytes.count where bytes[i] == 0x0a {
            if bytes[i - 1] == 0x0a || (bytes[i - 1] == 0x0d && bytes[i - 2] == 0x0a) { return true }
        }
        return false
    }

    /// Routes a request by its first line.
    static func route(_ head: [UInt8]) -> Route {
        let firstLine = head.prefix { $0 != 0x0d && $0 != 0x0a }
        let parts = firstLine.split(separator: 0x20, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), parts[1].hasPrefix("/") else {
            return .status(400, "Bad Request")
        }
        let path = parts[1].prefix { $0 != "?" }
        guard path == "/metrics" else { return .status(404, "Not Found") }
        switch parts[0] {
        case "GET": return .metrics
        case "HEAD": return .metricsHead
        default: return .status(405, "Method Not Allowed")
        }
    }

    /// The whole response: status line, headers, and `body` unless `headOnly`.
    static func response(code: Int, reason: String, contentType: String, body: [UInt8], headOnly: Bool = false) -> [UInt8] {
        var head = "HTTP/1.1 \(code) \(reason)\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        if code == 405 { head += "Allow: GET, HEAD\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (headOnly ? [] : body)
    }

    /// The response for a route other than the metrics: its status with a one-line body.
    static func response(status code: Int, _ reason: String) -> [UInt8] {
        response(code: code, reason: reason, contentType: "text/plain; charset=utf-8", body: Array("\(reason)\n".utf8))
    }
}
