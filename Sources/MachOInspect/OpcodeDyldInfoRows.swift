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
/// The streams do not follow address order, so the rows are collected and sorted once, as
/// 32-byte records of plain numbers (no reference counting, cheap to sort): a place index
/// instead of names, and a bind index into the list of bind targets, which grows only when
/// a stream changes its symbol, ordinal, addend or flags. ``forEach(_:)`` then hands the
/// rows out; the column widths are worked out while collecting.
struct OpcodeDyldInfoRows {
    private struct Record {
        let address: UInt64, pointer: UInt64
        /// Index into `places` (an image has far fewer than 2^31 sections).
        let place: Int32
        /// Index into `bindTargets`; -1 for a rebase.
        let bindTarget: Int
    }

    /// What a run of binds binds to.
    private struct BindTarget: Equatable {
        let symbol: String, libraryOrdinal: Int, addend: Int64, weakImport: Bool
    }

    private var records: [Record] = []
    /// The distinct (segment, section) pairs of the records.
    private var places: [(segment: String, section: String)] = []
    private var bindTargets: [BindTarget] = []
    private let shortNames: LibraryShortNames
    /// The columns' widths over every row.
    private(set) var widths = DyldInfoFormatter.Widths()

    init(_ image: MachOImage) throws(MachOError) {
        shortNames = LibraryShortNames(image)
        var fixupPlaces = FixupPlaces(segmentsOf: image)
        var records: [Record] = []
        var places: [(segment: String, section: String)] = []
        var bindTargets: [BindTarget] = []
        var widths = DyldInfoFormatter.Widths()
        func placeIndex(_ place: FixupPlaces.Place) -> Int32 {
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
            widths.include(
                segment: place.segmentName, section: place.sectionName, address: place.address, type: "rebase",
                addend: nil, symbol: "")
            records.append(Record(
                address: place.address, pointer: try Self.storedPointer(at: fixup.location, in: image),
                place: placeIndex(place), bindTarget: -1))
        }
        for stream in BindStreamKind.allCases {
            try image.forEachBindFixup(in: stream) { (fixup) throws(MachOError) in
                guard let location = fixup.location else { return }
                let place = try fixupPlaces.place(of: location, in: image)
                widths.include(
                    segment: place.segmentName, section: place.sectionName, address: place.address, type: "bind",
                    addend: fixup.addend, symbol: fixup.symbolName)
                let target = BindTarget(
                    symbol: fixup.symbolName, libraryOrdinal: fixup.libraryOrdinal, addend: fixup.addend,
                    weakImport: fixup.flags.contains(.weakImport))
                if bindTargets.last != target { bindTargets.append(target) }
                records.append(Record(
                    address: place.address, pointer: try Self.storedPointer(at: location, in: image),
                    place: placeIndex(place), bindTarget: bindTargets.count - 1))
            }
        }
        // Stable (Swift's sort is): at one address, rebases come before binds, and binds
        // keep stream order.
        records.sort { $0.address < $1.address }
        (self.records, self.places, self.bindTargets, self.widths) = (records, places, bindTargets, widths)
    }

    /// Calls `body` with each row, in address order.
    func forEach(_ body: (DyldInfoRow) -> Void) {
        for record in records {
            let place = places[Int(record.place)]
            var row = DyldInfoRow(
                segment: place.segment, section: place.section, address: record.address,
                pointer: record.pointer, type: record.bindTarget < 0 ? "rebase" : "bind", addend: nil)
            if record.bindTarget < 0 {
                row.targetAddress = record.pointer
            } else {
                let target = bindTargets[record.bindTarget]
                row.addend = target.addend
                row.dylib = shortNames[target.libraryOrdinal]
                row.symbol = target.symbol
                row.weakImport = target.weakImport
                row.libraryOrdinal = target.libraryOrdinal
            }
            body(row)
        }
    }

    /// The 8 bytes on disk at a fixup's location (the decoders checked they are in the file).
    private static func storedPointer(at location: FixupLocation, in image: MachOImage) throws(MachOError) -> UInt64 {
        try image.view.u64(Int(image.segments[location.segmentIndex].fileOffset + location.segmentOffset))
    }
}
