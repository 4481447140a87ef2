/// The range checks of the numbers the public API takes: a length, count, capacity or
/// duration outside what a call accepts is an ``AccessoryError/Code/invalidArgument`` error
/// naming the value and the range ("length -3 is out of range: 0...4096"), thrown before
/// anything is allocated, opened or sent.
package enum ArgumentCheck {
    /// The longest timeout libusb can wait for (its timeouts are `UInt32` milliseconds, about
    /// 49.7 days). A longer timeout means "forever", as `nil` does.
    package static let longestTimeout = Duration.milliseconds(Int64(UInt32.max))

    /// The longest interval a manager's configuration accepts; as ``longestTimeout``.
    package static let longestInterval = longestTimeout

    /// The largest data stage of one control transfer on this host: Linux's usbfs takes at
    /// most a page (libusb's `MAX_CTRL_BUFFER_LENGTH`, 4096 bytes; the kernel's
    /// `proc_control` refuses more with `EINVAL`).
    package static let maxControlTransferLength = 4096

    /// The most bytes one ``AccessorySession/transferIn(_:length:timeout:)`` asks for:
    /// usbfs's default memory limit, 16 MiB, as for ``maxTransferOutLength`` (65,535 is a
    /// control transfer's `wLength`; bulk and interrupt transfers have no such limit).
    package static let maxTransferInLength = 16 << 20

    /// The most bytes one ``AccessorySession/transferOut(_:_:timeout:)`` sends: usbfs's
    /// default memory limit, as for ``AccessorySession/Options/transferSize``.
    package static let maxTransferOutLength = 16 << 20

    /// `value`, or the error "NAME VALUE is out of range: LOWER...UPPER", with `code`
    /// (`.invalidArgument` unless a contract names another).
    @discardableResult
    package static func check(
        _ value: Int, in range: ClosedRange<Int>, _ name: String, operation: String, code: AccessoryError.Code = .invalidArgument
    ) throws(AccessoryError) -> Int {
        guard range.contains(value) else {
            let upper = range.upperBound == Int.max ? "" : "\(range.upperBound)"
            throw AccessoryError(code, "\(name) \(value) is out of range: \(range.lowerBound)...\(upper)", operation: operation)
        }
        return value
    }

    /// `value`, or the error "NAME VALUE is out of range: LOWER...UPPER".
    @discardableResult
    package static func check(
        _ value: Duration, in range: ClosedRange<Duration>, _ name: String, operation: String
    ) throws(AccessoryError) -> Duration {
        guard range.contains(value) else {
            throw AccessoryError(
                .invalidArgument, "\(name) \(value) is out of range: \(range.lowerBound)...\(range.upperBound)", operation: operation)
        }
        return value
    }

    /// A timeout as the layers below take it: `nil` for forever (given `nil`, or longer than
    /// ``longestTimeout``), else `timeout`. A negative timeout is an error.
    package static func timeout(_ timeout: Duration?, _ name: String = "timeout", operation: String) throws(AccessoryError) -> Duration? {
        guard let timeout else { return nil }
        guard timeout >= .zero else {
            throw AccessoryError(
                .invalidArgument,
                "\(name) \(timeout) is out of range: 0 seconds or more (nil, or more than \(longestTimeout), waits forever)",
                operation: operation)
        }
        return timeout > longestTimeout ? nil : timeout
    }

    /// A control transfer's data length: `length` in 0...``maxControlTransferLength``. Over
    /// the limit, the error says what the limit is and why, as hardware refuses it.
    package static func controlLength(_ length: Int, operation: String) throws(AccessoryError) {
        if length > maxControlTransferLength {
            throw AccessoryError(
                .invalidArgument,
                "control transfer of \(length) bytes exceeds Linux usbfs's limit of \(maxControlTransferLength) bytes per control transfer (libusb MAX_CTRL_BUFFER_LENGTH)",
                operation: operation)
        }
        try check(length, in: 0...maxControlTransferLength, "length", operation: operation)
    }
}

extension AccessoryManager.Configuration {
    /// Throws `.invalidArgument` for a duration out of its range: `reconcileInterval`
    /// 1 ms...49.7 days, `debounce` 0...49.7 days, `hotplugBatching` 0...1 s.
    package func validate() throws(AccessoryError) {
        let operation = "start the accessory manager"
        try ArgumentCheck.check(
            reconcileInterval, in: .milliseconds(1)...ArgumentCheck.longestInterval, "reconcileInterval", operation: operation)
        try ArgumentCheck.check(debounce, in: .zero...ArgumentCheck.longestInterval, "debounce", operation: operation)
        try ArgumentCheck.check(hotplugBatching, in: .zero...Duration.seconds(1), "hotplugBatching", operation: operation)
    }
}
