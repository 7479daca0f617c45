/// `relocation_info`: one relocation entry of a section (object files; linked images have
/// none in their sections). 64-bit images have no scattered relocations.
package struct RelocationInfo: Equatable, Sendable {
    package static let size = 8
    /// `r_address`: the offset in the section of the bytes to relocate.
    package let address: UInt32
    /// `r_symbolnum`: a symbol table index (`r_extern`) or a 1-based section number.
    package let symbolNumber: UInt32, isPCRelative: Bool
    /// `r_length`: log2 of the size relocated.
    package let length: UInt8, isExtern: Bool, type: UInt8

    /// Parses the first ``size`` bytes of `view`.
    package init(parsing view: ByteView) throws(MachOError) {
        address = try view.u32(0)
        let word = try view.u32(4)
        symbolNumber = word & 0x00ff_ffff
        isPCRelative = (word >> 24) & 1 != 0
        length = UInt8((word >> 25) & 3)
        isExtern = (word >> 27) & 1 != 0
        type = UInt8(word >> 28)
    }
}

extension MachOImage {
    /// The relocation entries of `section` (its `reloff` and `nreloc`), in file order.
    package func relocations(of section: Section) throws(MachOError) -> [RelocationInfo] {
        guard section.relocationCount != 0 else { return [] }
        let table = try fileBytes(offset: UInt64(section.relocationOffset), size: UInt64(section.relocationCount) * UInt64(RelocationInfo.size))
        return try (0..<Int(section.relocationCount)).map { (index) throws(MachOError) in
            try RelocationInfo(parsing: table.slice(index * RelocationInfo.size, RelocationInfo.size))
        }
    }
}
