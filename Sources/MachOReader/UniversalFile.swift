/// A file as the reader finds it: one thin Mach-O image or a universal (fat) file of
/// several, each a ``Slice``.
public struct UniversalFile: Sendable {
    public static let fatMagic: UInt32 = 0xcafe_babe
    public static let fatMagic64: UInt32 = 0xcafe_babf
    /// A real universal file never holds more; the cap also bounds the allocation.
    public static let maxSlices: UInt32 = 64

    /// One architecture's image inside the file.
    public struct Slice: Sendable {
        public let cpu: CPUType
        /// Absolute offset of the image in the file (0 for a thin file).
        public let offset: Int
        public let size: Int
        /// `align` from the fat_arch entry (a power of two); 0 for a thin file.
        public let alignment: UInt32
    }

    /// The whole file.
    public let view: ByteView
    /// True for a universal file, even one holding a single architecture.
    public let isUniversal: Bool
    public let slices: [Slice]

    /// Reads the container structure of `bytes`: which images it holds and where.
    public init(parsing bytes: [UInt8]) throws(MachOError) {
        try self.init(parsing: ByteView(bytes))
    }

    public init(parsing view: ByteView) throws(MachOError) {
        self.view = view
        let magicBE = try view.u32BE(0)
        if magicBE == UniversalFile.fatMagic || magicBE == UniversalFile.fatMagic64 {
            let is64 = magicBE == UniversalFile.fatMagic64
            let count = try view.u32BE(4)
            guard count <= UniversalFile.maxSlices else {
                throw MachOError.malformed("universal header claims \(count) architectures", at: view.absolute(4))
            }
            let entrySize = is64 ? 32 : 20
            var slices: [Slice] = []
            for index in 0..<Int(count) {
                let entry = 8 + index * entrySize
                let cpu = CPUType(
                    type: Int32(bitPattern: try view.u32BE(entry)),
                    subtype: Int32(bitPattern: try view.u32BE(entry + 4)))
                let offset = is64 ? try view.u64BE(entry + 8) : UInt64(try view.u32BE(entry + 8))
                let size = is64 ? try view.u64BE(entry + 16) : UInt64(try view.u32BE(entry + 12))
                let align = try view.u32BE(entry + (is64 ? 24 : 16))
                // The slice must lie inside the file.
                let sliceView = try view.slice(offset: offset, size: size)
                slices.append(Slice(cpu: cpu, offset: sliceView.base, size: sliceView.count, alignment: align))
            }
            self.isUniversal = true
            self.slices = slices
        } else {
            let header = try MachHeader(parsing: view)
            self.isUniversal = false
            self.slices = [Slice(cpu: header.cpu, offset: view.base, size: view.count, alignment: 0)]
        }
    }

    /// The slice for `arch`, or an error naming the architectures present.
    public func slice(for arch: String) throws(MachOError) -> Slice {
        guard let slice = slices.first(where: { $0.cpu.matches(arch) }) else {
            let present = slices.map(\.cpu.name).joined(separator: ", ")
            throw MachOError(offset: view.base, .noSuchArchitecture("\(arch) (file has \(present))"))
        }
        return slice
    }

    /// Parses the image of one slice.
    public func image(_ slice: Slice) throws(MachOError) -> MachOImage {
        try MachOImage(parsing: try view.slice(slice.offset - view.base, slice.size))
    }
}
