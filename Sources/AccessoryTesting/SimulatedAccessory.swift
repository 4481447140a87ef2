/// A virtual accessory to plug into a ``SimulatedUSB``: its IDs, strings and interfaces, and
/// the responder that plays its part in sessions.
///
/// It has one vendor-specific interface per protocol, interface N named by protocol N. Made
/// with `protocols:`, interface N has a bulk OUT endpoint `0x01+N` and a bulk IN endpoint
/// `0x81+N` of 512-byte packets; made with `interfaces:`, each has the endpoints and
/// alternate settings its ``SimulatedInterface`` lists.
public struct SimulatedAccessory: Sendable {
    /// The USB vendor ID (`idVendor`).
    public var vendor: UInt16
    /// The USB product ID (`idProduct`).
    public var product: UInt16
    /// The serial number string, or `nil` for a device without one.
    public var serial: String?
    /// The protocols it speaks, one vendor-specific interface each, in interface order.
    /// Setting it gives every interface the default bulk pair.
    public var protocols: [String] {
        get { interfaces.map(\.protocolName) }
        set { interfaces = newValue.enumerated().map { SimulatedInterface.bulkPair(protocol: $1, number: $0) } }
    }
    /// Its interfaces, interface N at index N.
    public var interfaces: [SimulatedInterface]
    /// What it does with the data and control requests of sessions.
    public var responder: SimulatedResponder
    /// The manufacturer string, or `nil`.
    public var manufacturer: String?
    /// The product string, or `nil`.
    public var name: String?
    /// The device release number (`bcdDevice`), binary-coded decimal.
    public var bcdDevice: UInt16
    /// Its part in Android Open Accessory, when it plays a phone (``androidPhone(serial:product:responder:)``).
    var androidRole: AndroidRole?
    /// How START ends on a phone (``answeringStart(_:)``).
    var startAnswer = StartAnswer.completes
    /// A replayed device's recorded descriptors, shown instead of those `interfaces` make.
    var recorded: RecordedDescriptors?
    /// A replayed device's playback (``init(replaying:device:recording:pacing:)``).
    var replay: ReplayScript?

    enum AndroidRole: Sendable, Hashable {
        /// A phone that switches into accessory mode on START.
        case phone
        /// The phone in accessory mode (18d1:2d01).
        case accessoryMode
    }

    /// An accessory with these IDs, strings and protocols, whose sessions `responder` answers
    /// (by default an echo of every byte written).
    public init(
        vendor: UInt16, product: UInt16, serial: String? = nil, protocols: [String] = ["org.example.loopback"],
        responder: SimulatedResponder = .loopback, manufacturer: String? = "Example", name: String? = "Simulated Accessory",
        bcdDevice: UInt16 = 0x0100
    ) {
        self.init(
            vendor: vendor, product: product, serial: serial,
            interfaces: protocols.enumerated().map { SimulatedInterface.bulkPair(protocol: $1, number: $0) }, responder: responder,
            manufacturer: manufacturer, name: name, bcdDevice: bcdDevice)
    }

    /// An accessory with these interfaces (each with its endpoints and alternate settings),
    /// whose transfers `responder` answers: a per-endpoint one
    /// (``SimulatedResponder/init(onTransfer:)``) sees each endpoint's transfers; a write
    /// responder (the default echoes) answers on each interface's first IN endpoint.
    ///
    /// ```swift
    /// let reader = SimulatedAccessory(
    ///     vendor: 0x1209, product: 0x0042, serial: "FP1",
    ///     interfaces: [SimulatedInterface(protocol: "com.example.reader", endpoints: [
    ///         AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 64),
    ///         AccessoryEndpoint(address: 0x82, kind: .bulk, maxPacketSize: 64),
    ///         AccessoryEndpoint(address: 0x83, kind: .interrupt, maxPacketSize: 8),
    ///     ])],
    ///     responder: SimulatedResponder { transfer, device in
    ///         if transfer.endpoint == 0x01 { device.queue([0x90, 0x00], on: 0x82) }
    ///         return .queued
    ///     })
    /// ```
    public init(
        vendor: UInt16, product: UInt16, serial: String? = nil, interfaces: [SimulatedInterface],
        responder: SimulatedResponder = .loopback, manufacturer: String? = "Example", name: String? = "Simulated Accessory", bcdDevice: UInt16 = 0x0100
    ) {
        self.vendor = vendor
        self.product = product
        self.serial = serial
        self.interfaces = interfaces
        self.responder = responder
        self.manufacturer = manufacturer
        self.name = name
        self.bcdDevice = bcdDevice
    }
}

extension SimulatedAccessory {
    /// An Android phone (18d1:`product`) that speaks Android Open Accessory 2, as
    /// `accessory-sim`'s `,android` accessory does: it answers GET_PROTOCOL (51) with 2
    /// (clearing the strings it holds, as real phones do), stores SEND_STRING (52) indices
    /// 0–5, and on START (53) leaves and comes back on the same port at the next address as
    /// 18d1:2d01 with the same serial, speaking `android.accessory` on interface 0. There
    /// `responder` plays the phone's app. ``SimulatedUSB/accessoryStrings(of:)`` reads the
    /// strings it received.
    public static func androidPhone(serial: String, product: UInt16 = 0x4ee7, responder: SimulatedResponder = .loopback) -> SimulatedAccessory {
        var phone = SimulatedAccessory(
            vendor: 0x18d1, product: product, serial: serial, protocols: [], responder: responder, manufacturer: "Google", name: "Pixel 8")
        phone.androidRole = .phone
        return phone
    }

    /// How START (53) ends on a simulated phone as it leaves the bus to come back in
    /// accessory mode. Real phones that drop off during the status stage give the host any
    /// of these; the phone re-enumerates all the same.
    public enum StartAnswer: Sendable, Hashable {
        /// The status stage completes (the default).
        case completes
        /// The phone is gone first: NO_DEVICE.
        case noDevice
        /// A STALL.
        case stall
        /// A protocol error (EPROTO), which libusb reports as an I/O error.
        case protocolError
        /// No status stage at all: the host's timeout. The request fails at once, without
        /// the clock moving.
        case timeout
    }

    /// This phone, with START ending as `answer` says (it switches all the same). Only a
    /// phone (``androidPhone(serial:product:responder:)``) answers START.
    public func answeringStart(_ answer: StartAnswer) -> SimulatedAccessory {
        var phone = self
        phone.startAnswer = answer
        return phone
    }

    /// What the phone becomes in accessory mode.
    var inAccessoryMode: SimulatedAccessory {
        var a = SimulatedAccessory(
            vendor: 0x18d1, product: 0x2d01, serial: serial, protocols: ["android.accessory"], responder: responder,
            manufacturer: manufacturer, name: name, bcdDevice: bcdDevice)
        a.androidRole = .accessoryMode
        return a
    }
}

extension SimulatedAccessory: Hashable {
    /// Equal IDs, strings, interfaces, Android role and recorded descriptors. The responder (and a replay's progress) is behaviour, not
    /// identity, so it is not compared.
    public static func == (lhs: SimulatedAccessory, rhs: SimulatedAccessory) -> Bool {
        lhs.vendor == rhs.vendor && lhs.product == rhs.product && lhs.serial == rhs.serial && lhs.interfaces == rhs.interfaces
            && lhs.manufacturer == rhs.manufacturer && lhs.name == rhs.name && lhs.bcdDevice == rhs.bcdDevice
            && lhs.androidRole == rhs.androidRole && lhs.recorded == rhs.recorded
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(vendor)
        hasher.combine(product)
        hasher.combine(serial)
        hasher.combine(protocols)
    }
}
