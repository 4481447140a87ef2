/// Decodes USB string descriptors (USB 2.0 §9.6.7): UTF-16LE text after a 2-byte header.
///
/// Malformed text never fails: a dangling odd byte and unpaired surrogates each become
/// U+FFFD, the replacement character.
package enum USBStringDescriptor {
    /// Decodes a whole string descriptor, header included.
    ///
    /// `bLength` is honoured when it is shorter than the data; when it claims more than is
    /// present, only what is present is decoded.
    /// - Returns: the text, or `nil` when the bytes are not a string descriptor.
    package static func decode(_ descriptor: [UInt8]) -> String? {
        guard let payload = payload(descriptor) else { return nil }
        return decodeUTF16LE(payload)
    }

    /// Decodes UTF-16LE bytes. An odd trailing byte becomes one U+FFFD.
    package static func decodeUTF16LE(_ bytes: ArraySlice<UInt8>) -> String {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var i = bytes.startIndex
        while i + 1 < bytes.endIndex {
            units.append(UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8)
            i += 2
        }
        // String(decoding:as:) repairs unpaired surrogates with U+FFFD.
        var text = String(decoding: units, as: UTF16.self)
        if bytes.count % 2 == 1 { text.unicodeScalars.append("\u{FFFD}") }
        return text
    }

    /// Decodes UTF-16LE bytes. An odd trailing byte becomes one U+FFFD.
    package static func decodeUTF16LE(_ bytes: [UInt8]) -> String {
        decodeUTF16LE(bytes[...])
    }

    /// The language IDs in string descriptor 0.
    package static func languageIDs(_ descriptor: [UInt8]) -> [UInt16] {
        guard let payload = payload(descriptor) else { return [] }
        var ids: [UInt16] = []
        var i = payload.startIndex
        while i + 1 < payload.endIndex {
            ids.append(UInt16(payload[i]) | UInt16(payload[i + 1]) << 8)
            i += 2
        }
        return ids
    }

    /// The bytes after the header, bounded by `bLength` and by the data.
    private static func payload(_ descriptor: [UInt8]) -> ArraySlice<UInt8>? {
        guard descriptor.count >= 2, descriptor[1] == USBDescriptorParser.DescriptorType.string,
            descriptor[0] >= 2
        else { return nil }
        let end = min(Int(descriptor[0]), descriptor.count)
        return descriptor[2..<end]
    }
}
