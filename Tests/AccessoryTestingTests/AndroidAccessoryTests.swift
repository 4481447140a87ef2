import AccessoryCore
import AccessoryKit
import AccessoryTesting
import Synchronization
import Testing

/// Control transfers and Android Open Accessory on simulated USB, through the real manager.
@Suite("Control transfers and Android Open Accessory (simulated)")
struct AndroidAccessoryTests {
    static let identity = AndroidAccessoryIdentity(
        manufacturer: "Example", model: "Loopback", description: "An example loopback", version: "1.0",
        uri: "https://example.org", serial: "0001")

    static func error(_ body: () async throws -> Void) async -> AccessoryError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? AccessoryError
        }
    }

    @Test("A control request reaches the responder; IN data is cut to the length asked; a refusal is .stall")
    func controlThroughTheResponder() async throws {
        let usb = SimulatedUSB()
        let seen = Mutex<[ControlRequest]>([])
        let device = SimulatedAccessory(
            vendor: 0x1209, product: 0x0005, serial: "C1",
            responder: SimulatedResponder(
                onWrite: { _, bytes in .respond([bytes]) },
                onControl: { request, data in
                    seen.withLock { $0.append(request) }
                    switch (request.request, data) {
                    case (1, nil): return .data([1, 2, 3, 4])
                    case (2, let bytes?): return bytes == [9, 9] ? .accept : .stall
                    default: return .stall
                    }
                }))
        await usb.plug(device)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let got = try await manager.controlTransfer(from: accessory, ControlRequest(.vendor, request: 1, value: 7), length: 2)
            #expect(got == [1, 2])
            try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 2), data: [9, 9])
            let refused = await Self.error { try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 2), data: [1]) }
            #expect(refused?.code == .stall)
            #expect(refused?.message.contains("refused vendor request 2") == true)
        }
        #expect(seen.withLock { $0.map(\.request) } == [1, 2, 2])
        #expect(seen.withLock { $0.first?.value } == 7)
    }

    @Test("An interface-recipient request claims its interface; another holder makes it .busy")
    func interfaceRecipientClaims() async throws {
        let usb = SimulatedUSB()
        let device = SimulatedAccessory(
            vendor: 0x1209, product: 0x0006, serial: "C2",
            responder: SimulatedResponder(onWrite: { _, b in .respond([b]) }, onControl: { _, _ in .data([0, 0]) }))
        await usb.plug(device)
        try await withAccessoryManager(usb: usb) { manager in
            let accessory = try #require(await manager.connectedAccessories.first)
            let status = ControlRequest(.standard, recipient: .interface, request: 0, index: 0)
            #expect(try await manager.controlTransfer(from: accessory, status, length: 2) == [0, 0])
            // A session of this manager holds interface 0: the request goes through its claim.
            let through = try await manager.withSession(to: accessory, protocol: "org.example.loopback") { _ throws(AccessoryError) in
                try await manager.controlTransfer(from: accessory, status, length: 2)
            }
            #expect(through == [0, 0])
            // Another manager (another process) holds it: busy.
            try await withAccessoryManager(usb: usb) { other in
                let theirs = try #require(await other.connectedAccessories.first)
                try await other.withSession(to: theirs, protocol: "org.example.loopback") { (_) async throws -> Void in
                    let busy = await Self.error { _ = try await manager.controlTransfer(from: accessory, status, length: 2) }
                    #expect(busy?.code == .busy)
                }
            }
        }
    }

    @Test("AOA: the phone switches, comes back as 18d1:2d01 on its port at a new address, linked to its old connection, with the six strings; its app echoes")
    func switchesIntoAccessoryMode() async throws {
        let usb = SimulatedUSB()
        let phoneDevice = await usb.plug(.androidPhone(serial: "PHONE1"))
        try await withAccessoryManager(usb: usb) { manager in
            let phone = try #require(await manager.connectedAccessories.first)
            let events = await manager.events(includingCurrent: false)
            let version = try await manager.controlTransfer(from: phone, ControlRequest(.vendor, request: 51), length: 2)
            #expect(version == [2, 0])
            let switched = try await manager.switchToAccessoryMode(phone, identity: Self.identity)
            #expect(switched.descriptor.vendor == 0x18d1 && switched.descriptor.product == 0x2d01)
            #expect(switched.descriptor.port == phone.descriptor.port)
            #expect(switched.descriptor.address != phone.descriptor.address)
            #expect(switched.descriptor.serial == "PHONE1")
            #expect(switched.previousConnectionID == phone.connectionID)
            #expect(switched.connectionID > phone.connectionID)
            // The phone's connection ended as an unplug, before the new one.
            var seen: [AccessoryEvent] = []
            for await event in events {
                seen.append(event)
                if case .connected = event { break }
            }
            #expect(seen == [.disconnected(phone, .unplugged), .connected(switched)])
            #expect(switched.protocolStrings.contains("android.accessory"))
            let now = try #require(await usb.devices.first)
            #expect(await usb.accessoryStrings(of: now) == Self.identity.strings.map { Optional($0) })
            #expect(await usb.accessoryStrings(of: phoneDevice) == [])
            let echo = try await manager.withSession(to: switched, protocol: ProtocolRule.androidAccessoryProtocol) { session in
                try await session.write("hello phone")
                try await session.flush()
                return try await session.read(exactly: 11)
            }
            #expect(echo == Array("hello phone".utf8))
            // Already in accessory mode: returned as it is.
            #expect(try await manager.switchToAccessoryMode(switched, identity: Self.identity) == switched)
        }
    }

    @Test("GET_PROTOCOL clears the strings a phone holds")
    func getProtocolClearsStrings() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(.androidPhone(serial: "P2"))
        try await withAccessoryManager(usb: usb) { manager in
            let phone = try #require(await manager.connectedAccessories.first)
            try await manager.controlTransfer(to: phone, ControlRequest(.vendor, request: 52, index: 1), data: Array("Model\0".utf8))
            #expect(await usb.accessoryStrings(of: device).dropFirst().first == "Model")
            _ = try await manager.controlTransfer(from: phone, ControlRequest(.vendor, request: 51), length: 2)
            #expect(await usb.accessoryStrings(of: device) == Array(repeating: nil, count: 6))
        }
    }

    @Test("AOA errors: not an AOA device, version 0, no re-enumeration within the wait, access denied, a string too long")
    func errors() async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"), port: "1-1")
        await usb.plug(
            SimulatedAccessory(
                vendor: 0x1209, product: 0x0007, serial: "V0",
                responder: SimulatedResponder(onWrite: { _, b in .respond([b]) }, onControl: { r, _ in r.request == 51 ? .data([0, 0]) : .stall })),
            port: "1-2")
        let stuck = await usb.plug(
            SimulatedAccessory(
                vendor: 0x1209, product: 0x0008, serial: "ST",
                responder: SimulatedResponder(onWrite: { _, b in .respond([b]) }, onControl: { r, _ in r.request == 51 ? .data([2, 0]) : .accept })),
            port: "1-3")
        let locked = await usb.plug(.androidPhone(serial: "LOCKED"), port: "1-4")
        await usb.denyAccess(to: locked)
        try await withAccessoryManager(usb: usb) { manager in
            let byPort = Dictionary(uniqueKeysWithValues: await manager.connectedAccessories.map { ($0.descriptor.port, $0) })
            let loopback = try #require(byPort["1-1"]), zero = try #require(byPort["1-2"])
            let silent = try #require(byPort["1-3"]), denied = try #require(byPort["1-4"])

            let notAOA = await Self.error { _ = try await manager.switchToAccessoryMode(loopback, identity: Self.identity) }
            #expect(notAOA?.code == .protocolNotSupported)
            #expect(notAOA?.message.contains("not an Android Open Accessory device") == true)

            let versionZero = await Self.error { _ = try await manager.switchToAccessoryMode(zero, identity: Self.identity) }
            #expect(versionZero?.code == .protocolNotSupported)
            #expect(versionZero?.message.contains("version 0") == true)

            // It takes START but never comes back: the wait (virtual time) runs out.
            let waiting = Task { () async -> AccessoryError? in
                await Self.error { _ = try await manager.switchToAccessoryMode(silent, identity: Self.identity, wait: .seconds(10)) }
            }
            #expect(await usb.waitForSleepers())
            await usb.advance(by: .seconds(10))
            let timedOut = await waiting.value
            #expect(timedOut?.code == .timeout)
            #expect(timedOut?.message.contains("did not come back in accessory mode") == true)
            #expect(await manager.connectedAccessories.contains(silent))
            _ = stuck

            let noAccess = await Self.error { _ = try await manager.switchToAccessoryMode(denied, identity: Self.identity) }
            #expect(noAccess?.code == .accessDenied)
            #expect(noAccess?.message.contains("udev rule") == true)

            var long = Self.identity
            long.uri = String(repeating: "u", count: 300)
            let tooLong = await Self.error { _ = try await manager.switchToAccessoryMode(zero, identity: long) }
            #expect(tooLong?.message.contains("URI string is 300 bytes") == true)
        }
    }

    @Test("A replug links its new connection to the old one; a different accessory on the port does not")
    func replugLinks() async throws {
        let usb = SimulatedUSB()
        let first = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "SN1"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let old = try #require(await manager.connectedAccessories.first)
            let again = await usb.replug(first)
            let renewed = try #require(await manager.connectedAccessories.first)
            #expect(renewed.previousConnectionID == old.connectionID)
            await usb.unplug(again)
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0009, serial: "OTHER"), port: "1-1")
            let other = try #require(await manager.connectedAccessories.first)
            #expect(other.previousConnectionID == nil)
        }
    }

    @Test("A reset keeps the connection when the device stays; when it comes back changed on its port, the new connection names the old; an open session makes it .busy")
    func resetKeepsTheLink() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "R1"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            try await manager.reset(before)
            await usb.advance(by: .milliseconds(100))
            #expect(await manager.connectedAccessories == [before], "the same instance: the same connection")

            let busy = await Self.error {
                try await manager.withSession(to: before, protocol: "org.example.loopback") { (_) async throws -> Void in
                    try await manager.reset(before)
                }
            }
            #expect(busy?.code == .busy)

            // A reset after which the device re-enumerates with new descriptors (a firmware
            // update, a mode change): another PID, on the same port.
            try await manager.reset(before)
            await usb.unplug(device)
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x00f0, serial: "R1-DFU"), port: "1-1")
            let after = try #require(await manager.connectedAccessories.first)
            #expect(after.descriptor.product == 0x00f0)
            #expect(after.previousConnectionID == before.connectionID)
        }
    }

    /// A device that speaks AOA through its own responder: it takes START but never
    /// re-enumerates (or refuses START with `start`).
    static func aoaResponder(serial: String, start: SimulatedResponder.ControlReply = .accept) -> SimulatedAccessory {
        SimulatedAccessory(
            vendor: 0x1209, product: 0x0008, serial: serial,
            responder: SimulatedResponder(
                onWrite: { _, b in .respond([b]) },
                onControl: { r, _ in r.request == 51 ? .data([2, 0]) : r.request == 53 ? start : .accept }))
    }

    @Test(
        "AOA: a phone that fails START as it drops off the bus (NO_DEVICE, STALL, EPROTO, a timeout) is waited for all the same",
        arguments: [SimulatedAccessory.StartAnswer.noDevice, .stall, .protocolError, .timeout])
    func startFailsWhileThePhoneLeaves(answer: SimulatedAccessory.StartAnswer) async throws {
        let usb = SimulatedUSB()
        await usb.plug(SimulatedAccessory.androidPhone(serial: "FLAKY").answeringStart(answer), port: "1-2")
        try await withAccessoryManager(usb: usb) { manager in
            let phone = try #require(await manager.connectedAccessories.first)
            let switched = try await manager.switchToAccessoryMode(phone, identity: Self.identity)
            #expect(switched.descriptor.product == 0x2d01)
            #expect(switched.descriptor.port == "1-2")
            #expect(switched.previousConnectionID == phone.connectionID)
        }
    }

    @Test("AOA: START refused and nothing comes back within the wait: START's error, saying that no accessory-mode device appeared")
    func startFailsAndNothingComesBack() async throws {
        let usb = SimulatedUSB()
        await usb.plug(Self.aoaResponder(serial: "REFUSES", start: .stall), port: "1-3")
        try await withAccessoryManager(usb: usb) { manager in
            let device = try #require(await manager.connectedAccessories.first)
            let waiting = Task { () async -> AccessoryError? in
                await Self.error { _ = try await manager.switchToAccessoryMode(device, identity: Self.identity, wait: .seconds(5)) }
            }
            #expect(await usb.waitForSleepers())
            await usb.advance(by: .seconds(5))
            let error = await waiting.value
            #expect(error?.code == .stall)
            #expect(error?.message.contains("START (53) failed with") == true, "\(String(describing: error))")
            #expect(error?.message.contains("no accessory-mode device (18d1:2d00–2d05) appeared on port 1-3 within 5") == true)
        }
    }

    @Test("AOA: the mark that links the phone's successor ends with the wait: hours later, another device on the port is not linked")
    func modeSwitchMarkEndsWithTheWait() async throws {
        let usb = SimulatedUSB()
        let stuck = await usb.plug(Self.aoaResponder(serial: "STUCK"), port: "1-3")
        try await withAccessoryManager(usb: usb) { manager in
            let device = try #require(await manager.connectedAccessories.first)
            let waiting = Task { () async -> AccessoryError? in
                await Self.error { _ = try await manager.switchToAccessoryMode(device, identity: Self.identity, wait: .seconds(10)) }
            }
            #expect(await usb.waitForSleepers())
            await usb.advance(by: .seconds(10))
            #expect(await waiting.value?.code == .timeout)
            await usb.advance(by: .seconds(3600))
            await usb.unplug(stuck)
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0009, serial: "OTHER"), port: "1-3")
            let other = try #require(await manager.connectedAccessories.first)
            #expect(other.descriptor.serial == "OTHER")
            #expect(other.previousConnectionID == nil)
        }
    }

    @Test("A reset's mark ends too: a device that stays, then much later another device on the port, is not linked")
    func resetMarkEnds() async throws {
        let usb = SimulatedUSB()
        let device = await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x0001, serial: "R2"), port: "1-1")
        try await withAccessoryManager(usb: usb) { manager in
            let before = try #require(await manager.connectedAccessories.first)
            try await manager.reset(before)
            await usb.advance(by: .seconds(3600))
            #expect(await manager.connectedAccessories == [before])
            await usb.unplug(device)
            await usb.plug(SimulatedAccessory(vendor: 0x1209, product: 0x00f1, serial: "ELSE"), port: "1-1")
            let other = try #require(await manager.connectedAccessories.first)
            #expect(other.descriptor.serial == "ELSE")
            #expect(other.previousConnectionID == nil)
        }
    }
}
