/// A sequential reader over a ``ByteView``: bytes, LEB128 and C strings.
///
/// Used for opcode streams, export tries and other variable-length encodings.
package struct ByteCursor: Sendable {
    /// The bounded region being read.
    package let view: ByteView
    /// The window-relative offset of the next byte.
    package var position: Int

    package init(_ view: ByteView, at position: Int = 0) { (self.view, self.position) = (view, position) }

    /// True when every byte has been consumed.
    package var atEnd: Bool { position >= view.count }

    /// The absolute file offset of the next byte.
    package var absoluteOffset: Int { view.absolute(position) }

    package mutating func u8() throws(MachOError) -> UInt8 {
        let value = try view.u8(position)
        position += 1
        return value
    }

    /// An unsigned LEB128 value; more than 64 significant bits is an error.
    package mutating func uleb128() throws(MachOError) -> UInt64 { try view.uleb128(at: &position) }

    /// A signed LEB128 value; more than 64 significant bits is an error.
    package mutating func sleb128() throws(MachOError) -> Int64 { try view.sleb128(at: &position) }

    /// The bytes of a NUL-terminated string, terminator excluded (nothing is copied); the
    /// cursor moves past the terminator.
    package mutating func cStringBytes() throws(MachOError) -> ByteView {
        let bytes = try view.cStringBytes(position)
        position += bytes.count + 1
        return bytes
    }
}
