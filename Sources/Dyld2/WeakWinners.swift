import LaunchPlan
import MachOReader

/// Weak coalescing's answer per symbol name, the names being the bytes of the images that bind
/// them (compared and hashed in place, so a lookup makes no string). An open-addressed table
/// over arrays rather than a `Dictionary`: the first `Dictionary` keyed by a type of this
/// module costs a fresh process a scan of every protocol conformance it holds (for the key's
/// `Hashable`), which a `dlopen` early in `main` would pay. Recorded with nil answers, it is a
/// set of names (``SharedCachePatches``).
struct WeakWinners {
    /// Per slot, 1 + the entry it holds, or 0; a power of two, at most half full.
    private var slots: [Int] = []
    private var names: [ByteView] = []
    /// Per entry, its name's hash: compared before the bytes, and kept when the slots grow.
    private var hashes: [Int] = []
    private var winners: [BindTarget?] = []
    /// One bit per ``quickKey(_:)`` of the names recorded: a name whose bit is clear is not
    /// recorded, found without hashing it (most names a lookup meets are not: the patch
    /// table's 46,321 exports against 312 weak names at 400 frameworks).
    private var recordedKeys = [UInt64](repeating: 0, count: 1 << 10)

    /// How many names are recorded: entries 0..<count, in the order recorded.
    var count: Int { names.count }

    /// The name entry `entry` records, and its answer (nil when no image defines it).
    func name(_ entry: Int) -> ByteView { names[entry] }
    func winner(_ entry: Int) -> BindTarget? { winners[entry] }

    /// The entry recording `name`, or nil when none does.
    func entry(of name: ByteView) -> Int? {
        let key = Self.quickKey(name)
        guard recordedKeys[key >> 6] & (1 << UInt64(key & 63)) != 0 else { return nil }
        return entry(of: name, hash: Self.hash(name))
    }

    /// `name`'s entry and hash (for ``record(_:for:hash:)`` when it has none).
    func find(_ name: ByteView) -> (entry: Int?, hash: Int) {
        let hash = Self.hash(name)
        return (entry(of: name, hash: hash), hash)
    }

    private func entry(of name: ByteView, hash: Int) -> Int? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != 0 {
            let entry = slots[slot] - 1
            if hashes[entry] == hash, names[entry].sameBytes(as: name) { return entry }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Records `name` (with no answer) unless it is recorded.
    mutating func insert(_ name: ByteView) {
        let (entry, hash) = find(name)
        if entry == nil { record(nil, for: name, hash: hash) }
    }

    /// Records the answer for a name not recorded yet, whose hash ``find(_:)`` gave.
    mutating func record(_ winner: BindTarget?, for name: ByteView, hash: Int) {
        if (names.count + 1) * 2 > slots.count {
            slots = Array(repeating: 0, count: max(16, slots.count * 2))
            for (entry, known) in hashes.enumerated() { place(entry, known) }
        }
        place(names.count, hash)
        let key = Self.quickKey(name)
        recordedKeys[key >> 6] |= 1 << UInt64(key & 63)
        names.append(name)
        hashes.append(hash)
        winners.append(winner)
    }

    private mutating func place(_ entry: Int, _ hash: Int) {
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = entry + 1
    }

    /// 16 bits of the name's length and first and last eight bytes, mixed: cheap, and no
    /// defence against chosen names (a name that passes is looked up by ``hash(_:)``).
    private static func quickKey(_ name: ByteView) -> Int {
        let count = name.count
        var key = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
        if count >= 8, let head = try? name.u64(0), let tail = try? name.u64(count - 8) {
            key ^= (head &* 0xC2B2_AE3D_27D4_EB4F) ^ (tail &* 0x1656_67B1_9E37_79F9)
        } else {
            for index in 0..<count { key = (key ^ UInt64((try? name.u8(index)) ?? 0)) &* 0x100_0000_01B3 }
        }
        return Int(truncatingIfNeeded: (key ^ key >> 29 ^ key >> 47) & 0xFFFF)
    }

    private static func hash(_ name: ByteView) -> Int {
        var hasher = Hasher()
        name.hashBytes(into: &hasher)
        return hasher.finalize()
    }
}
