import Testing

@testable import AccessoryCore

@Suite("Bus and address table")
struct AddressTableTests {
    @Test("It answers as a dictionary would, for kernel keys and for keys outside its rows")
    func sameAsDictionary() {
        var table = AddressTable()
        var reference: [DeviceKey: ConnectionID] = [:]
        var state: UInt64 = 11
        func below(_ n: Int) -> Int {  // xorshift64: a fixed sequence, the same every run
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(n))
        }
        let buses = [0, 1, 2, 3, 7, 255, 256, 1000, -1]
        let addresses = [0, 1, 2, 64, 127, 128, 500, -3]
        for step in 0..<20_000 {
            let key = DeviceKey(bus: buses[below(buses.count)], address: addresses[below(addresses.count)])
            switch below(3) {
            case 0:
                let id = ConnectionID(rawValue: UInt64(step + 1))
                table[key] = id
                reference[key] = id
            case 1:
                table[key] = nil
                reference[key] = nil
            default:
                let id = reference[key] ?? ConnectionID(rawValue: 99)
                let other = ConnectionID(rawValue: id.rawValue + 1)
                table.remove(key, ifItIs: other)  // another ID: stays
                #expect(table[key] == reference[key])
                table.remove(key, ifItIs: id)
                if reference[key] == id { reference[key] = nil }
            }
            #expect(table[key] == reference[key])
        }
        for (key, id) in reference { #expect(table[key] == id) }
        for bus in buses { for address in addresses { let k = DeviceKey(bus: bus, address: address); #expect(table[k] == reference[k]) } }
    }

    @Test("Clearing a key on a bus never stored makes no row")
    func clearingUnknown() {
        var table = AddressTable()
        table[DeviceKey(bus: 9, address: 3)] = nil
        #expect(table[DeviceKey(bus: 9, address: 3)] == nil)
        table[DeviceKey(bus: 9, address: 3)] = ConnectionID(rawValue: 5)
        #expect(table[DeviceKey(bus: 9, address: 3)] == ConnectionID(rawValue: 5))
        #expect(table[DeviceKey(bus: 9, address: 4)] == nil)
    }
}

@Suite("Bus and address table, sparse buses")
struct AddressTableSparseTests {
    @Test("A bus below one in use, never stored itself, has nothing")
    func sparse() {
        var table = AddressTable()
        table[DeviceKey(bus: 3, address: 9)] = ConnectionID(rawValue: 1)
        #expect(table[DeviceKey(bus: 1, address: 9)] == nil)
        #expect(table[DeviceKey(bus: 2, address: 127)] == nil)
        table.remove(DeviceKey(bus: 1, address: 9), ifItIs: ConnectionID(rawValue: 1))
        #expect(table[DeviceKey(bus: 3, address: 9)] == ConnectionID(rawValue: 1))
    }
}
