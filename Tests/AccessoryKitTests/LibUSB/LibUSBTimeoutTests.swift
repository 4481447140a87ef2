import Testing
@testable import AccessoryKit

/// libusb's timeouts are `UInt32` milliseconds, 0 meaning forever: every `Duration` maps onto
/// one without a trap.
@Suite("libusb timeouts")
struct LibUSBTimeoutTests {
    static let cases: [(Duration, UInt32)] = [
        (.seconds(Int64.max), 0), (.seconds(Int64.max) * 15, 0),
        (Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999), 0),
        (.milliseconds(Int64(UInt32.max) + 1), 0), (.milliseconds(Int64(UInt32.max)), UInt32.max),
        (.seconds(1), 1000), (.microseconds(1500), 1), (.milliseconds(1), 1), (.nanoseconds(1), 1), (.zero, 1),
        (.nanoseconds(-1), 1), (.seconds(Int64.min), 1), (.seconds(Int64.min) * 15, 1),
    ]

    @Test("Durations become libusb milliseconds: rounded down, at least 1, and 0 (forever) beyond UInt32", arguments: cases)
    func milliseconds(duration: Duration, expected: UInt32) {
        #expect(LibUSBDeviceHandle.milliseconds(duration) == expected)
    }
}
