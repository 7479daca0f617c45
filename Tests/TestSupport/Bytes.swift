import Foundation

/// LEB128 bytes, for hand-made opcode streams, tries and fixup runs.
public enum LEB {
    public static func unsigned(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        repeat {
            let byte = UInt8(value & 0x7f)
            value >>= 7
            bytes.append(value == 0 ? byte : byte | 0x80)
        } while value != 0
        return bytes
    }

    public static func signed(_ value: Int64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while true {
            let byte = UInt8(value & 0x7f)
            value >>= 7
            let done = (value == 0 && byte & 0x40 == 0) || (value == -1 && byte & 0x40 != 0)
            bytes.append(done ? byte : byte | 0x80)
            if done { return bytes }
        }
    }
}

/// A small deterministic generator (SplitMix64): damage tests try the same bytes every run.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
