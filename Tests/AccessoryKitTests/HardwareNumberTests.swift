import AccessoryCore
import Foundation
import Glibc
import Testing
@testable import AccessoryKit

extension HardwareTests {
    /// Hostile numbers through real libusb against accessory-sim: control-transfer lengths
    /// and timeouts, and usbfs's own limit on a control transfer, which the simulator's
    /// usbfs enforces as the kernel does.
    @Suite("Hostile numbers and the control-transfer limit")
    struct Numbers {
        static let getDescriptor = ControlRequest(.standard, request: 6, value: 0x0100)
        static let limitMessage =
            "control transfer of 5000 bytes exceeds Linux usbfs's limit of 4096 bytes per control transfer (libusb MAX_CTRL_BUFFER_LENGTH)"

        static func outcome<T>(_ body: () async throws(AccessoryError) -> T) async -> Result<T, AccessoryError> {
            do { return .success(try await body()) } catch { return .failure(error) }
        }

        @Test func controlLengthsAndTimeoutsThroughLibusb() async throws {
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let (manager, log) = try await HardwareTests.manager()
            let device = try plugged.plug("1209:0010:NUMBERS")
            try #require(await log.wait { $0.contains { HardwareTests.isAt(device)($0.accessory) } })
            let accessory = try #require(await log.connected.first(where: HardwareTests.isAt(device)))

            // Before the fix, -1...-8 overflowed the transfer's buffer and below that trapped.
            for length in [-1, -3, -8, -9, -4097, Int.min] {
                let result = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.controlTransfer(from: accessory, Self.getDescriptor, length: length)
                }
                guard case .failure(let error) = result else {
                    Issue.record("length \(length) went through")
                    continue
                }
                #expect(error.code == .invalidArgument && error.message == "length \(length) is out of range: 0...4096", "\(error)")
            }
            // Over the limit: refused as Linux refuses it, saying why, both ways.
            for send in [false, true] {
                let result = await Self.outcome { () async throws(AccessoryError) in
                    if send {
                        try await manager.controlTransfer(to: accessory, ControlRequest(.vendor, request: 1), data: [UInt8](repeating: 0, count: 5000))
                    } else {
                        _ = try await manager.controlTransfer(from: accessory, Self.getDescriptor, length: 5000)
                    }
                }
                guard case .failure(let error) = result else {
                    Issue.record("a 5000-byte control transfer went through")
                    continue
                }
                #expect(error.code == .invalidArgument && error.message == Self.limitMessage, "\(error)")
            }
            // The limit itself works.
            #expect(try await manager.controlTransfer(from: accessory, Self.getDescriptor, length: 4096).count == 18)
            // Huge timeouts mean forever (libusb's 0), not a trap; tiny ones still get the answer
            // or a timeout; a negative one is refused.
            for timeout: Duration in [.seconds(Int64.max), .seconds(Int64.max) * 15, .milliseconds(Int64(UInt32.max) + 1), .seconds(1)] {
                #expect(try await manager.controlTransfer(from: accessory, Self.getDescriptor, length: 18, timeout: timeout).count == 18)
            }
            for timeout: Duration in [.nanoseconds(-1), .seconds(-1), .seconds(Int64.min)] {
                let result = await Self.outcome { () async throws(AccessoryError) in
                    try await manager.controlTransfer(from: accessory, Self.getDescriptor, length: 18, timeout: timeout)
                }
                guard case .failure(let error) = result else {
                    Issue.record("timeout \(timeout) went through")
                    continue
                }
                #expect(error.code == .invalidArgument && error.message.contains("timeout \(timeout) is out of range"), "\(error)")
            }
            #expect(await manager.connectedAccessories.contains(accessory))
            await manager.shutdown()
        }

        /// `struct usbdevfs_ctrltransfer` and `_IOWR('U', 0, …)`: USBDEVFS_CONTROL.
        struct ControlTransfer {
            var requestType: UInt8
            var request: UInt8
            var value: UInt16
            var index: UInt16
            var length: UInt16
            var timeout: UInt32
            var data: UnsafeMutableRawPointer?
        }
        static let usbdevfsControl = UInt(0xC000_0000) | UInt(MemoryLayout<ControlTransfer>.size) << 16 | UInt(UInt8(ascii: "U")) << 8 | 0

        /// The simulator's usbfs refuses a USBDEVFS_CONTROL over a page as the kernel's
        /// `proc_control` does (EINVAL), and takes one of exactly a page.
        @Test func theSimulatorsUsbfsRefusesControlTransfersOverAPage() throws {
            #expect(MemoryLayout<ControlTransfer>.size == 24)
            let plugged = Plugged()
            defer { plugged.unplugAll() }
            let device = try plugged.plug("1209:0011:USBFS")
            let fd = open(DeviceNode.path(bus: device.bus, address: device.address), O_RDWR | O_CLOEXEC)
            try #require(fd >= 0, "open: errno \(errno)")
            defer { close(fd) }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: 5000, alignment: 8)
            defer { buffer.deallocate() }
            func control(_ length: UInt16) -> (Int32, Int32) {
                var ct = ControlTransfer(requestType: 0x80, request: 6, value: 0x0100, index: 0, length: length, timeout: 1000, data: buffer)
                let r = ioctl(fd, Self.usbdevfsControl, &ct)
                return (r, r < 0 ? errno : 0)
            }
            #expect(control(4096) == (18, 0))
            #expect(control(4097) == (-1, EINVAL))
            #expect(control(5000) == (-1, EINVAL))
            #expect(control(18) == (18, 0))
        }
    }
}
