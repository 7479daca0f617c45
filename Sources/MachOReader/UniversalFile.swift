/// A file as the reader finds it: one thin Mach-O image or a universal (fat) file of
/// several, each a ``Slice``.
package struct UniversalFile: Sendable {
    package static let fatMagic: UInt32 = 0xcafe_babe
    package static let fatMagic64: UInt32 = 0xcafe_babf
    /// A real universal file never holds more; the cap also bounds the allocation.
    package static let maxSlices: UInt32 = 64
    /// The largest slice alignment (2^15) llvm-objdump accepts.
    package static let maxAlignment: UInt32 = 15

    /// One architecture's image inside the file.
    package struct Slice: Sendable {
        package let cpu: CPUType
        /// Absolute offset of the image in the file (0 for a thin file).
        package let offset: Int, size: Int
        /// `align` from the fat_arch entry (a power of two); 0 for a thin file.
        package let alignment: UInt32
    }

    /// The whole file.
    package let view: ByteView
    /// True for a universal file, even one holding a single architecture.
    package let isUniversal: Bool, slices: [Slice]

    /// Reads the container structure of `bytes`: which images it holds and where.
    package init(parsing bytes: [UInt8]) throws(MachOError) { try self.init(parsing: ByteView(bytes)) }

    package init(parsing view: ByteView) throws(MachOError) {
        self.view = view
        let magicBE = try view.u32BE(0)
        if magicBE == UniversalFile.fatMagic || magicBE == UniversalFile.fatMagic64 {
            let is64 = magicBE == UniversalFile.fatMagic64
            let count = try view.u32BE(4)
            guard count <= UniversalFile.maxSlices else {
                throw MachOError.malformed("universal header claims \(count) architectures", at: view.absolute(4))
            }
            guard count > 0 else { throw MachOError.malformed("universal header holds no architectures", at: view.absolute(4)) }
            let entrySize = is64 ? 32 : 20
            let headersEnd = UInt64(8 + Int(count) * entrySize)
            var slices: [Slice] = []
            for index in 0..<Int(count) {
                let entry = 8 + index * entrySize
                let cpu = CPUType(type: Int32(bitPattern: try view.u32BE(entry)), subtype: Int32(bitPattern: try view.u32BE(entry + 4)))
                let offset = is64 ? try view.u64BE(entry + 8) : UInt64(try view.u32BE(entry + 8))
                let size = is64 ? try view.u64BE(entry + 16) : UInt64(try view.u32BE(entry + 12))
                let align = try view.u32BE(entry + (is64 ? 24 : 16))
                // The slice must lie inside the file, aligned, after the fat_arch entries.
                let sliceView = try view.slice(offset: offset, size: size)
                guard align <= UniversalFile.maxAlignment else {
                    throw MachOError.malformed("architecture \(index) (\(cpu.name)): align 2^\(align) is over 2^\(UniversalFile.maxAlignment)", at: view.absolute(entry + (is64 ? 24 : 16)))
                }
                guard offset % (1 << UInt64(align)) == 0 else {
                    throw MachOError.malformed("architecture \(index) (\(cpu.name)): offset \(hex(offset)) is not aligned to 2^\(align)", at: view.absolute(entry + 8))
                }
                guard offset >= headersEnd else {
                    throw MachOError.malformed("architecture \(index) (\(cpu.name)): offset \(hex(offset)) overlaps the universal headers", at: view.absolute(entry + 8))
                }
                let slice = Slice(cpu: cpu, offset: sliceView.base, size: sliceView.count, alignment: align)
                try slice.checkDistinct(from: slices, entryOffset: view.absolute(entry))
                slices.append(slice)
            }
            self.isUniversal = true
            self.slices = slices
        } else {
            let header = try MachHeader(parsing: view)
            // llvm-objdump does not recognize a thin file of another type as an object file.
            guard MachHeader.FileType.known.contains(header.fileType.rawValue) else {
                throw MachOError.malformed("not an object file: unknown filetype \(header.fileType.rawValue)", at: view.absolute(12))
            }
            self.isUniversal = false
            self.slices = [Slice(cpu: header.cpu, offset: view.base, size: view.count, alignment: 0)]
        }
    }

    /// The slice for `arch`, or an error naming the architectures present.
    package func slice(for arch: String) throws(MachOError) -> Slice {
        guard let slice = slices.first(where: { $0.cpu.matches(arch) }) else {
            let present = slices.map(\.cpu.name).joined(separator: ", ")
            throw MachOError(offset: view.base, .noSuchArchitecture("\(arch) (file has \(present))"))
        }
        return slice
    }

    /// Parses the image of one slice, whose header must name the slice's CPU type.
    package func image(_ slice: Slice) throws(MachOError) -> MachOImage {
        let image = try MachOImage(parsing: try view.slice(slice.offset - view.base, slice.size))
        guard image.header.cpu.type == slice.cpu.type else {
            throw MachOError.malformed(
                "the universal header says \(slice.cpu.name) but the image's header says cputype \(hex(UInt32(bitPattern: image.header.cpu.type)))",
                at: slice.offset + 4)
        }
        return image
    }
}

extension UniversalFile.Slice {
    /// Fails if an earlier slice has the same architecture or shares bytes with this one.
    func checkDistinct(from earlier: [UniversalFile.Slice], entryOffset: Int) throws(MachOError) {
        for other in earlier {
            if other.cpu.type == cpu.type && other.cpu.baseSubtype == cpu.baseSubtype {
                throw MachOError.malformed("universal file holds two \(cpu.name) slices", at: entryOffset)
            }
            if overlaps(offset, offset + size, other.offset, other.offset + other.size) {
                throw MachOError.malformed(
                    "\(cpu.name) slice at \(hex(offset)) (\(hex(size)) bytes) overlaps the \(other.cpu.name) slice at \(hex(other.offset))",
                    at: entryOffset)
            }
        }
    }
}
