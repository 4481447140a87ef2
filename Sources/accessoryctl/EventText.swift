import AccessoryCore

/// Human-readable lines for notifications and accessories (the non-JSON output).
enum EventText {
    static let header = "ID      EVENT          BUS:ADDR  PORT        VID:PID    SERIAL        REASON / LINK"

    static func line(_ event: AccessoryEvent, style: TerminalStyle, prefix: String = "") -> String {
        let a = event.accessory
        let d = a.descriptor
        let what: String
        var reason = ""
        switch event {
        case .connected:
            what = style.green(pad("connected", 14))
            if let previous = a.previousConnectionID { reason = style.dim("continues #\(previous.rawValue)") }
        case .disconnected(_, let r):
            what = r.code == "ghost-evicted" ? style.yellow(pad("disconnected", 14)) : style.red(pad("disconnected", 14))
            reason = r.description
        }
        return prefix + pad(String(a.connectionID.rawValue), 7) + " " + what + " "
            + pad("\(d.bus):\(d.address.map(String.init) ?? "?")", 9) + " " + pad(d.port, 11) + " "
            + pad(d.vendorProduct, 10) + " " + pad(d.serial ?? "-", 13) + " " + reason
    }

    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }
}
