import MachOReader

/// The `--dyld-info` rows of an image whose fixups are dyld-info opcode streams.
///
/// llvm-objdump 19 prints no rows for such images (its `--dyld-info` walks chained fixups
/// only), so these rows extend its format: every rebase, bind, lazy bind and weak bind, in
/// address order, laid out as llvm lays out chained fixups. A rebase's target is the
/// unslid address stored at its location; a bind names its symbol, and a weak bind has the
/// weak-lookup ordinal, as a chained weak bind does. Strong-definition entries of the
/// weak-bind stream fix nothing up and have no row.
///
/// The streams do not follow address order, so the rows are collected (as small records:
/// a place index instead of names, an ordinal instead of a dylib name) and sorted once;
/// ``forEach(_:)`` then hands them out as many times as the table needs.
struct OpcodeDyldInfoRows {
    private struct Record {
        let address: UInt64
        let pointer: UInt64
        let addend: Int64
        let symbol: String
        /// Index into `places`.
        let place: Int32
        let libraryOrdinal: Int32
        let isBind: Bool
        let weakImport: Bool
    }

    private var records: [Record] = []
    /// The distinct (segment, section) pairs of the records.
    private var places: [(segment: String, section: String)] = []
    private let shortNames: LibraryShortNames

    init(_ image: MachOImage) throws(MachOError) {
        shortNames = LibraryShortNames(image)
        var fixupPlaces = OpcodeFixupPlaces(image)
        var records: [Record] = []
        var places: [(segment: String, section: String)] = []
        func placeIndex(_ place: OpcodeFixupPlaces.Place) -> Int32 {
            if let last = places.last, last.segment == place.segmentName, last.section == place.sectionName {
                return Int32(places.count - 1)
            }
            if let index = places.firstIndex(where: { $0.segment == place.segmentName && $0.section == place.sectionName }) {
                return Int32(index)
            }
            places.append((place.segmentName, place.sectionName))
            return Int32(places.count - 1)
        }
        try image.forEachRebaseFixup { (fixup) throws(MachOError) in
            let place = try fixupPlaces.place(of: fixup.location, in: image)
            records.append(Record(
                address: place.address, pointer: try Self.storedPointer(at: fixup.location, in: image), addend: 0,
                symbol: "", place: placeIndex(place), libraryOrdinal: 0, isBind: false, weakImport: false))
        }
        for stream in BindStreamKind.allCases {
            try image.forEachBindFixup(in: stream) { (fixup) throws(MachOError) in
                guard let location = fixup.location else { return }
                let place = try fixupPlaces.place(of: location, in: image)
                records.append(Record(
                    address: place.address, pointer: try Self.storedPointer(at: location, in: image), addend: fixup.addend,
                    symbol: fixup.symbolName, place: placeIndex(place),
                    libraryOrdinal: Int32(clamping: fixup.libraryOrdinal), isBind: true,
                    weakImport: fixup.flags.contains(.weakImport)))
            }
        }
        // Stable (Swift's sort is): at one address, rebases come before binds, and binds
        // keep stream order.
        records.sort { $0.address < $1.address }
        self.records = records
        self.places = places
    }

    /// Calls `body` with each row, in address order.
    func forEach(_ body: (DyldInfoRow) -> Void) {
        for record in records {
            let place = places[Int(record.place)]
            var row = DyldInfoRow(
                segment: place.segment, section: place.section, address: record.address,
                pointer: record.pointer, type: record.isBind ? "bind" : "rebase", addend: record.isBind ? record.addend : nil)
            if !record.isBind {
                row.targetAddress = record.pointer
            } else {
                row.dylib = shortNames[Int(record.libraryOrdinal)]
                row.symbol = record.symbol
                row.weakImport = record.weakImport
            }
            body(row)
        }
    }

    /// The 8 bytes on disk at a fixup's location (the decoders checked they are in the file).
    private static func storedPointer(at location: FixupLocation, in image: MachOImage) throws(MachOError) -> UInt64 {
        try image.view.u64(Int(image.segments[location.segmentIndex].fileOffset + location.segmentOffset))
    }
}
