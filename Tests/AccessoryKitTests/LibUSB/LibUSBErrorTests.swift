import AccessoryCore
import CLibUSB
import Glibc
import Testing
@testable import AccessoryKit

@Suite("libusb status mapping")
struct LibUSBErrorTests {
    @Test func everyStatusHasItsCode() throws {
        let node = DeviceNode(bus: 1, address: 5, vendor: 0x1209, product: 0x0001)
        let cases: [(libusb_error, AccessoryError.Code)] = [
            (LIBUSB_ERROR_ACCESS, .accessDenied),
            (LIBUSB_ERROR_NO_DEVICE, .accessoryDisconnected(.ghostEvicted(.noDevice(operation: "claim interface 0")))),
            (LIBUSB_ERROR_BUSY, .busy), (LIBUSB_ERROR_TIMEOUT, .timeout), (LIBUSB_ERROR_PIPE, .stall),
            (LIBUSB_ERROR_OVERFLOW, .overflow), (LIBUSB_ERROR_NOT_FOUND, .notFound), (LIBUSB_ERROR_IO, .io),
            (LIBUSB_ERROR_NO_MEM, .io), (LIBUSB_ERROR_NOT_SUPPORTED, .io), (LIBUSB_ERROR_OTHER, .io),
            (LIBUSB_ERROR_INTERRUPTED, .cancelled),
        ]
        for (status, code) in cases {
            let error = LibUSB.error(status.rawValue, operation: "claim interface 0", device: node)
            #expect(error.code == code)
            #expect(error.rawValue == status.rawValue && error.operation == "claim interface 0")
            #expect(!error.message.isEmpty && !error.message.contains("unknown"))
        }
        #expect(try LibUSB.check(0, "x") == 0)
        #expect(try LibUSB.check(3, "x") == 3)
    }

    @Test("INVALID_PARAM (an interface number of 32 or more, for one) is an error, not a crash")
    func invalidParameterIsAnError() {
        let node = DeviceNode(bus: 1, address: 5, vendor: 0x1209, product: 0x0001)
        let error = LibUSB.error(LIBUSB_ERROR_INVALID_PARAM.rawValue, operation: "claim interface 40", device: node)
        #expect(error.code == .io)
        #expect(error.message.contains("LIBUSB_ERROR_INVALID_PARAM") && error.message.contains("claim interface 40"))
        #expect(error.rawValue == LIBUSB_ERROR_INVALID_PARAM.rawValue)
    }

    @Test func accessDeniedNamesTheUdevRule() {
        let node = DeviceNode(bus: 1, address: 5, vendor: 0x1209, product: 0x0001)
        let error = LibUSB.error(LIBUSB_ERROR_ACCESS.rawValue, operation: "libusb_open", device: node)
        #expect(error.message == "no permission to open /dev/bus/usb/001/005; install a udev rule: accessoryctl udev-rule --vendor 1209 --product 0001 | sudo tee /etc/udev/rules.d/70-accessorykit.rules")
        let fromErrno = LibUSB.error(errno: EACCES, operation: "open", device: node)
        #expect(fromErrno.code == .accessDenied && fromErrno.rawValue == EACCES)
        #expect(LibUSB.error(errno: ENOENT, operation: "open", device: node).code
            == .accessoryDisconnected(.ghostEvicted(.noDevice(operation: "open"))))
    }

    @Test func portChainsUseTheKernelsNames() {
        #expect(USBDeviceRecord.portChain(bus: 1, ports: [1, 4]) == "1-1.4")
        #expect(USBDeviceRecord.portChain(bus: 3, ports: [2]) == "3-2")
        #expect(USBDeviceRecord.portChain(bus: 2, ports: []) == "usb2")
        #expect(DeviceNode.path(bus: 1, address: 127) == "/dev/bus/usb/001/127")
    }

}
