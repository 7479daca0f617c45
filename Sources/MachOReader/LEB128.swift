/// LEB128, the variable-length integers of opcode streams, tries, closure records and fixup
/// runs: the one encoder (the closure format and the tests that hand-make streams write
/// through it) and the one decoder (``unsigned(at:_:)``, ``signed(at:_:)``).
@usableFromInline package enum LEB128 {
    /// Appends `value` as unsigned LEB128.
    @inline(__always)
    package static func appendUnsigned(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        repeat {
            let byte = UInt8(value & 0x7f)
            value >>= 7
            bytes.append(value == 0 ? byte : byte | 0x80)
        } while value != 0
    }

    /// Appends `value` as signed LEB128.
    @inline(__always)
    package static func appendSigned(_ value: Int64, to bytes: inout [UInt8]) {
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
    package static func unsigned(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        appendUnsigned(value, to: &bytes)
        return bytes
    }

    /// `value` as signed LEB128 bytes.
    package static func signed(_ value: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        appendSigned(value, to: &bytes)
        return bytes
    }
}

/// A LEB128 number read by ``LEB128/unsigned(at:_:)`` or ``LEB128/signed(at:_:)``, or where
/// and why it did not decode; each reader words the failure in its own error.
@usableFromInline package enum LEB128Read<Value> {
    case value(Value)
    /// The bytes end inside the number (the index of the end).
    case truncated(at: Int)
    /// The number is over 64 bits (the index of the byte that makes it so).
    case tooLarge(at: Int)
}

extension LEB128 {
    /// The one LEB128 decoder: the unsigned number whose bytes `byte` gives from index
    /// `position` on (nil past the end), `position` moved past it. Every reader of the format
    /// (Mach-O opcode streams and tries, closure records, fixup runs) goes through here.
    @inlinable @inline(__always)
    package static func unsigned(at position: inout Int, _ byte: (Int) -> UInt8?) -> LEB128Read<UInt64> {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard let next = byte(position) else { return .truncated(at: position) }
            position += 1
            guard shift < 64, !(shift == 63 && next & 0x7e != 0) else { return .tooLarge(at: position - 1) }
            result |= UInt64(next & 0x7f) << shift
            if next & 0x80 == 0 { return .value(result) }
            shift += 7
        }
    }

    /// The signed number whose bytes `byte` gives from index `position` on, as
    /// ``unsigned(at:_:)`` reads an unsigned one.
    @inlinable @inline(__always)
    package static func signed(at position: inout Int, _ byte: (Int) -> UInt8?) -> LEB128Read<Int64> {
        var result: Int64 = 0
        var shift: Int64 = 0
        var next: UInt8
        repeat {
            guard let read = byte(position) else { return .truncated(at: position) }
            guard shift < 64 else { return .tooLarge(at: position) }
            next = read
            position += 1
            result |= Int64(next & 0x7f) << shift
            shift += 7
        } while next & 0x80 != 0
        if shift < 64, next & 0x40 != 0 { result |= -1 << shift }
        return .value(result)
    }
}
