/// The six strings a host sends an Android phone with Android Open Accessory's SEND_STRING
/// (52), in index order. The phone offers the app that declares the manufacturer, model and
/// version, or opens the URI when none is installed.
public struct AndroidAccessoryIdentity: Sendable, Hashable {
    /// Manufacturer name (string 0); with `model`, it picks the app on the phone.
    public var manufacturer: String
    /// Model name (string 1).
    public var model: String
    /// Description shown to the user (string 2).
    public var description: String
    /// Version (string 3).
    public var version: String
    /// URI offered when no app handles the accessory (string 4).
    public var uri: String
    /// Serial number (string 5).
    public var serial: String

    /// An identity; only `manufacturer` and `model` are required.
    public init(manufacturer: String, model: String, description: String = "", version: String = "1.0", uri: String = "", serial: String = "") {
        self.manufacturer = manufacturer
        self.model = model
        self.description = description
        self.version = version
        self.uri = uri
        self.serial = serial
    }

    /// The strings by SEND_STRING index: 0 manufacturer, 1 model, 2 description, 3 version,
    /// 4 URI, 5 serial.
    package var strings: [String] { [manufacturer, model, description, version, uri, serial] }

    /// The names of the strings by index, for errors.
    static let names = ["manufacturer", "model", "description", "version", "URI", "serial"]

    /// Each string as SEND_STRING's data: UTF-8 with its terminating NUL, 256 bytes at most.
    /// - Throws: a message naming the first string that is too long or holds a NUL.
    func payloads() throws(AccessoryError) -> [[UInt8]] {
        try strings.enumerated().map { (i, s) throws(AccessoryError) in
            let bytes = Array(s.utf8)
            guard !bytes.contains(0) else {
                throw AccessoryError(.io, "the \(Self.names[i]) string holds a NUL byte", operation: "Android Open Accessory")
            }
            guard bytes.count < 256 else {
                throw AccessoryError(
                    .io, "the \(Self.names[i]) string is \(bytes.count) bytes; Android Open Accessory takes at most 255 and a NUL",
                    operation: "Android Open Accessory")
            }
            return bytes + [0]
        }
    }
}
