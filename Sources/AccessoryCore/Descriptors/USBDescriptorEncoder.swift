/// Writes parsed descriptors back as the bytes a device sends for GET_DESCRIPTOR: the
/// inverse of ``USBDescriptorParser`` for the standard descriptors (class-specific ones,
/// which the parser skips, are not written).
package enum USBDescriptorEncoder {
    /// The 18-byte device descriptor.
    package static func device(_ d: USBDeviceDescriptor) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(USBDeviceDescriptor.size), USBDescriptorParser.DescriptorType.device]
        bytes += word(d.bcdUSB)
        bytes += [d.deviceClass, d.deviceSubclass, d.deviceProtocol, d.maxPacketSize0]
        bytes += word(d.vendor)
        bytes += word(d.product)
        bytes += word(d.bcdDevice)
        bytes += [d.manufacturerIndex, d.productIndex, d.serialNumberIndex, d.configurationCount]
        return bytes
    }

    /// The whole configuration descriptor (`wTotalLength` bytes): its header, then each
    /// interface descriptor followed by its endpoints.
    package static func configuration(_ c: USBConfiguration) -> [UInt8] {
        var body: [UInt8] = []
        for i in c.interfaces {
            body += [
                9, USBDescriptorParser.DescriptorType.interface, i.number, i.alternate, UInt8(truncatingIfNeeded: i.endpoints.count),
                i.interfaceClass, i.interfaceSubclass, i.interfaceProtocol, i.nameIndex,
            ]
            for e in i.endpoints {
                body += [7, USBDescriptorParser.DescriptorType.endpoint, e.address, e.attributes]
                body += word(e.maxPacketSize)
                body.append(e.interval)
            }
        }
        let numbers = Set(c.interfaces.map(\.number)).count
        var bytes: [UInt8] = [9, USBDescriptorParser.DescriptorType.configuration]
        bytes += word(UInt16(clamping: 9 + body.count))
        bytes += [UInt8(truncatingIfNeeded: numbers), c.value, c.nameIndex, c.attributes, c.maxPower]
        return bytes + body
    }

    /// A string descriptor holding `text` (UTF-16LE, at most 126 code units).
    package static func string(_ text: String) -> [UInt8] {
        let units = Array(text.utf16.prefix(126))
        return [UInt8(2 + 2 * units.count), USBDescriptorParser.DescriptorType.string] + units.flatMap(word)
    }

    /// String descriptor 0: the languages, US English only.
    package static let languages: [UInt8] = [4, USBDescriptorParser.DescriptorType.string, 0x09, 0x04]

    private static func word(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
}
