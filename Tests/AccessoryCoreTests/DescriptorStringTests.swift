import Testing
@testable import AccessoryCore

@Suite("USB string descriptors")
struct DescriptorStringTests {
    @Test func decodesPlainText() {
        let text = Array("Loopback".utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] })
        #expect(USBStringDescriptor.decode([UInt8(2 + text.count), 3] + text) == "Loopback")
    }

    @Test func decodesSurrogatePairs() {
        // "é😀": U+00E9, then U+1F600 as D83D DE00.
        #expect(USBStringDescriptor.decode([8, 3, 0xe9, 0x00, 0x3d, 0xd8, 0x00, 0xde]) == "é😀")
    }

    @Test func oddLengthEndsWithOneReplacementCharacter() {
        #expect(USBStringDescriptor.decode([5, 3, 0x41, 0x00, 0x42]) == "A\u{FFFD}")
        #expect(USBStringDescriptor.decodeUTF16LE([0x41]) == "\u{FFFD}")
        #expect(USBStringDescriptor.decodeUTF16LE([]) == "")
    }

    @Test func unpairedSurrogatesBecomeReplacementCharacters() {
        // Two high surrogates in a row, a lone low one, a high one before a letter.
        #expect(USBStringDescriptor.decode([8, 3, 0x3d, 0xd8, 0x3d, 0xd8, 0x41, 0x00]) == "\u{FFFD}\u{FFFD}A")
        #expect(USBStringDescriptor.decode([6, 3, 0x00, 0xde, 0x41, 0x00]) == "\u{FFFD}A")
        #expect(USBStringDescriptor.decode([6, 3, 0x3d, 0xd8, 0x41, 0x00]) == "\u{FFFD}A")
    }

    @Test func lengthIsBoundedByHeaderAndData() {
        #expect(USBStringDescriptor.decode([4, 3, 0x41, 0x00, 0x42, 0x00]) == "A")
        #expect(USBStringDescriptor.decode([200, 3, 0x41, 0x00]) == "A")
        #expect(USBStringDescriptor.decode([2, 3]) == "")
        #expect(USBStringDescriptor.decode([1, 3, 0x41, 0x00]) == nil)
        #expect(USBStringDescriptor.decode([4, 2, 0x41, 0x00]) == nil)
        #expect(USBStringDescriptor.decode([4]) == nil)
    }

    @Test func languageIDs() {
        #expect(USBStringDescriptor.languageIDs([6, 3, 0x09, 0x04, 0x07, 0x04]) == [0x0409, 0x0407])
        #expect(USBStringDescriptor.languageIDs([5, 3, 0x09, 0x04, 0x07]) == [0x0409])
    }
}
