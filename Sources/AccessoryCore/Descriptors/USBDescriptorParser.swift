/// Parses raw USB descriptors: pure, no I/O.
///
/// Hostile input never crashes or hangs the parser. Every descriptor advances the cursor by at
/// least two bytes, every read is bounds-checked, and the number of interfaces and endpoints
/// kept is capped. What cannot be parsed at all throws ``USBDescriptorError``; what can be
/// worked around is parsed as far as it goes and reported as a ``USBDescriptorIssue``.
package enum USBDescriptorParser {
    /// `bDescriptorType` values this parser knows.
    package enum DescriptorType {
        package static let device: UInt8 = 0x01
        package static let configuration: UInt8 = 0x02
        package static let string: UInt8 = 0x03
        package static let interface: UInt8 = 0x04
        package static let endpoint: UInt8 = 0x05
    }

    /// At most this many interface descriptors (alternate settings included) are kept per
    /// configuration.
    package static let maxInterfaceDescriptors = 256
    /// At most this many endpoints are kept per interface descriptor (USB allows 30).
    package static let maxEndpointsPerInterface = 30

    static let configurationHeaderSize = 9
    static let interfaceSize = 9
    static let endpointSize = 7

    /// Parses a device descriptor from the start of `bytes`.
    ///
    /// - Throws: ``USBDescriptorError`` when there are fewer than 18 bytes, `bLength` is below
    ///   18, or the type is not a device descriptor.
    package static func parseDevice(_ bytes: [UInt8]) throws(USBDescriptorError) -> USBDeviceDescriptor {
        let size = USBDeviceDescriptor.size
        guard bytes.count >= 2 else {
            throw .truncated(descriptorType: DescriptorType.device, needed: size, available: bytes.count)
        }
        guard bytes[1] == DescriptorType.device else {
            throw .unexpectedType(expected: DescriptorType.device, found: bytes[1])
        }
        guard bytes[0] >= size else { throw .invalidLength(descriptorType: DescriptorType.device, length: bytes[0]) }
        guard bytes.count >= size else {
            throw .truncated(descriptorType: DescriptorType.device, needed: size, available: bytes.count)
        }
        return USBDeviceDescriptor(
            bcdUSB: word(bytes, 2), deviceClass: bytes[4], deviceSubclass: bytes[5],
            deviceProtocol: bytes[6], maxPacketSize0: bytes[7], vendor: word(bytes, 8),
            product: word(bytes, 10), bcdDevice: word(bytes, 12), manufacturerIndex: bytes[14],
            productIndex: bytes[15], serialNumberIndex: bytes[16], configurationCount: bytes[17])
    }

    /// Parses one full configuration descriptor (`wTotalLength` bytes, as `GET_DESCRIPTOR`
    /// returns it) with its interfaces and endpoints.
    ///
    /// - Throws: ``USBDescriptorError`` when the 9-byte header itself is unusable.
    /// - Returns: the configuration, and the problems worked around.
    package static func parseConfiguration(
        _ bytes: [UInt8]
    ) throws(USBDescriptorError) -> (configuration: USBConfiguration, issues: [USBDescriptorIssue]) {
        var issues: [USBDescriptorIssue] = []
        let (configuration, _) = try configuration(in: bytes, at: 0, standalone: true, issues: &issues)
        return (configuration, issues)
    }

    /// Parses the binary sysfs `descriptors` attribute: an 18-byte device descriptor, then
    /// each configuration's full descriptor, one after another.
    ///
    /// - Throws: ``USBDescriptorError`` only when the device descriptor is unusable. A broken
    ///   configuration ends the list and is reported in ``USBDescriptors/issues``.
    package static func parse(sysfsDescriptors bytes: [UInt8]) throws(USBDescriptorError) -> USBDescriptors {
        let device = try parseDevice(bytes)
        var issues: [USBDescriptorIssue] = []
        var configurations: [USBConfiguration] = []
        var offset = USBDeviceDescriptor.size
        while offset < bytes.count {
            do {
                let (configuration, end) = try configuration(in: bytes, at: offset, standalone: false, issues: &issues)
                configurations.append(configuration)
                offset = end
            } catch {
                issues.append(.unreadableConfiguration(offset: offset, error))
                break
            }
        }
        if configurations.count != Int(device.configurationCount) {
            issues.append(.configurationCountMismatch(declared: device.configurationCount, found: configurations.count))
        }
        return USBDescriptors(device: device, configurations: configurations, issues: issues)
    }

    /// Parses the configuration starting at `start`; returns it and the offset just after it.
    /// The returned offset is always at least `start + 9`.
    private static func configuration(
        in b: [UInt8], at start: Int, standalone: Bool, issues: inout [USBDescriptorIssue]
    ) throws(USBDescriptorError) -> (USBConfiguration, Int) {
        let type = DescriptorType.configuration
        let available = b.count - start
        let headerSize = configurationHeaderSize
        guard available >= 2 else { throw .truncated(descriptorType: type, needed: headerSize, available: available) }
        guard b[start + 1] == type else { throw .unexpectedType(expected: type, found: b[start + 1]) }
        let headerLength = Int(b[start])
        guard headerLength >= headerSize else { throw .invalidLength(descriptorType: type, length: b[start]) }
        guard available >= headerLength else {
            throw .truncated(descriptorType: type, needed: headerLength, available: available)
        }
        let total = word(b, start + 2)
        guard Int(total) >= headerLength else { throw .invalidTotalLength(total) }
        if Int(total) > available || (standalone && Int(total) < available) {
            issues.append(.totalLengthMismatch(declared: Int(total), available: available))
        }
        var end = start + min(Int(total), available)

        var interfaces: [USBInterface] = []
        // The interface that endpoints belong to; nil before the first one and after a
        // skipped one.
        var current: Int?
        var skippedInterface = false
        var reportedTooManyInterfaces = false
        var reportedTooManyEndpoints = false
        var offset = start + headerLength
        scan: while offset < end {
            let remaining = end - offset
            guard remaining >= 2 else {
                issues.append(.trailingBytes(offset: offset, count: remaining))
                break
            }
            let length = Int(b[offset])
            guard length >= 2 else {
                issues.append(.invalidLength(offset: offset, length: b[offset]))
                break
            }
            guard length <= remaining else {
                issues.append(.truncated(offset: offset, length: length, available: remaining))
                break
            }
            let descriptorType = b[offset + 1]
            switch descriptorType {
            case DescriptorType.configuration:
                issues.append(.nestedConfiguration(offset: offset))
                end = offset
                break scan
            case DescriptorType.interface:
                current = nil
                skippedInterface = true
                reportedTooManyEndpoints = false
                if length < interfaceSize {
                    issues.append(.shortDescriptor(offset: offset, descriptorType: descriptorType, length: b[offset]))
                } else if interfaces.count >= maxInterfaceDescriptors {
                    if !reportedTooManyInterfaces {
                        issues.append(.tooManyInterfaces(limit: maxInterfaceDescriptors))
                        reportedTooManyInterfaces = true
                    }
                } else {
                    interfaces.append(USBInterface(
                        number: b[offset + 2], alternate: b[offset + 3], interfaceClass: b[offset + 5],
                        interfaceSubclass: b[offset + 6], interfaceProtocol: b[offset + 7],
                        nameIndex: b[offset + 8], declaredEndpointCount: b[offset + 4]))
                    current = interfaces.count - 1
                    skippedInterface = false
                }
            case DescriptorType.endpoint:
                if length < endpointSize {
                    issues.append(.shortDescriptor(offset: offset, descriptorType: descriptorType, length: b[offset]))
                } else if let i = current {
                    if interfaces[i].endpoints.count < maxEndpointsPerInterface {
                        interfaces[i].endpoints.append(USBEndpoint(
                            address: b[offset + 2], attributes: b[offset + 3],
                            maxPacketSize: word(b, offset + 4), interval: b[offset + 6]))
                    } else if !reportedTooManyEndpoints {
                        issues.append(.tooManyEndpoints(
                            interface: interfaces[i].number, alternate: interfaces[i].alternate,
                            limit: maxEndpointsPerInterface))
                        reportedTooManyEndpoints = true
                    }
                } else if !skippedInterface {
                    issues.append(.endpointOutsideInterface(offset: offset))
                }
            default:
                // Class-specific, interface association, SuperSpeed companion and any
                // unknown descriptor: skipped.
                break
            }
            offset += length
        }

        for interface in interfaces where interface.endpoints.count != Int(interface.declaredEndpointCount) {
            issues.append(.endpointCountMismatch(
                interface: interface.number, alternate: interface.alternate,
                declared: interface.declaredEndpointCount, found: interface.endpoints.count))
        }
        let declaredInterfaces = b[start + 4]
        let distinctNumbers = Set(interfaces.lazy.map(\.number)).count
        if distinctNumbers != Int(declaredInterfaces) {
            issues.append(.interfaceCountMismatch(declared: declaredInterfaces, found: distinctNumbers))
        }
        let configuration = USBConfiguration(
            value: b[start + 5], nameIndex: b[start + 6], attributes: b[start + 7],
            maxPower: b[start + 8], declaredInterfaceCount: declaredInterfaces, interfaces: interfaces)
        return (configuration, max(end, start + headerLength))
    }

    @inline(__always)
    private static func word(_ b: [UInt8], _ i: Int) -> UInt16 {
        UInt16(b[i]) | UInt16(b[i + 1]) << 8
    }
}
