/// The LEB128 encoder: the one place that writes the variable-length integers the reader
/// decodes (`ByteCursor.uleb128()`, `sleb128()`). The closure format and the tests that
/// hand-make opcode streams, tries and fixup runs all write through it.
public enum LEB128 {
    /// Appends `value` as unsigned LEB128.
    @inline(__always)
    public static func appendUnsigned(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        repeat {
            let byte = UInt8(value & 0x7f)
            value >>= 7
            bytes.append(value == 0 ? byte : byte | 0x80)
        } while value != 0
    }

    /// Appends `value` as signed LEB128.
    @inline(__always)
    public static func appendSigned(_ value: Int64, to bytes: inout [UInt8]) {
        var value = value
        while true {
            let byte = UInt8(value & 0x7f)
            value >>= 7
            let done = (value == 0 && byte & 0x40 == 0) || (value == -1 && byte & 0x40 != 0)
            bytes.append(done ? byte : byte | 0x80)
            if done { return }
        }
    }

    /// `value` as unsigned LEB128 bytes.
    public static func unsigned(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        appendUnsigned(value, to: &bytes)
        return bytes
    }

    /// `value` as signed LEB128 bytes.
    public static func signed(_ value: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        appendSigned(value, to: &bytes)
        return bytes
    }
}
