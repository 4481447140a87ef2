/// Numbers keys 0, 1, 2, … in order of first appearance, remembering the last key looked up:
/// consecutive events of one device or endpoint, the common case, cost no hashing.
struct SlotTable<Key: Hashable> {
    private var slots: [Key: Int] = [:]
    private var last: (key: Key, slot: Int)?

    /// How many keys have a slot.
    private(set) var count = 0

    /// Whether `key` has a slot.
    func contains(_ key: Key) -> Bool { slots[key] != nil }

    /// The slot of `key`, and whether this call gave it one.
    mutating func slot(of key: Key) -> (slot: Int, isNew: Bool) {
        if let last, last.key == key { return (last.slot, false) }
        var isNew = false
        let slot: Int
        if let known = slots[key] {
            slot = known
        } else {
            slot = count
            slots[key] = slot
            count += 1
            isNew = true
        }
        last = (key, slot)
        return (slot, isNew)
    }
}
