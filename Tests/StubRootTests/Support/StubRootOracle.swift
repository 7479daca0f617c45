import Foundation
import MachOInspect
import MachOReader
import StubRoot
import Testing

/// Compares written stub roots and collected imports with llvm-objdump-19.
enum StubRootOracle {
    /// Checks every stub and the host against llvm-objdump: the architectures, the file
    /// type, a stub's install name, and the exports trie (names and weak flags) of every
    /// slice. The host also exports `__mh_execute_header`, which the linker adds to every
    /// executable. Returns the number of comparisons made.
    static func expectFilesMatchPlan(_ plan: StubRootPlan) async throws -> Int {
        var comparisons = 0
        let images = plan.stubs.map { (path: $0.path, slices: $0.slices, installName: Optional($0.installName)) }
            + [(path: plan.host.path, slices: plan.host.slices, installName: nil)]
        for image in images {
            let archs = try await Command.run("/usr/lib/llvm-19/bin/llvm-lipo", ["-archs", image.path])
            #expect(archs.split(whereSeparator: \.isWhitespace).map(String.init).sorted() == image.slices.map(\.arch), "\(image.path)")
            comparisons += 1
            for slice in image.slices {
                let header = try await Command.objdump(["--private-header", "--arch=\(slice.arch)", image.path])
                #expect(header.contains(image.installName == nil ? " EXECUTE " : " DYLIB "), "\(image.path) \(slice.arch)")
                if let installName = image.installName {
                    let id = try await Command.objdump(["--dylib-id", "--arch=\(slice.arch)", image.path])
                    #expect(id.split(separator: "\n").last.map(String.init) == installName, "\(image.path) \(slice.arch)")
                    comparisons += 1
                }
                var expected = slice.exports
                if image.installName == nil { expected.append(StubExport(name: "__mh_execute_header", isWeakDefinition: false)) }
                let listed = try await exports(["--exports-trie", "--arch=\(slice.arch)", image.path])
                #expect(listed == expected.sorted(), "\(image.path) \(slice.arch)")
                comparisons += 2
            }
        }
        return comparisons
    }

    /// The exports llvm-objdump lists, sorted by name.
    private static func exports(_ arguments: [String]) async throws -> [StubExport] {
        try await Command.objdump(arguments).split(separator: "\n").compactMap { line -> StubExport? in
            guard line.hasPrefix("0x"), let space = line.firstIndex(of: " ") else { return nil }
            var name = line[space...].trimmingCharacters(in: .whitespaces)
            let weak = name.hasSuffix(" [weak_def]")
            if weak { name.removeLast(" [weak_def]".count) }
            return StubExport(name: name, isWeakDefinition: weak)
        }.sorted()
    }

    /// The imports of one slice as llvm-objdump lists them, as "library symbol" lines: the
    /// chained import table (library as the ordinal number), or the bind, lazy-bind and
    /// weak-bind tables (library as objdump's short name, "weak" for the weak-bind table).
    static func imports(of path: String, arch: String, chained: Bool) async throws -> Set<String> {
        var rows = Set<String>()
        if chained {
            var ordinal: String?
            for line in try await Command.objdump(["--chained-fixups", "--arch=\(arch)", path]).split(separator: "\n") {
                let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
                if fields.first == "lib_ordinal", fields.count >= 3 { ordinal = fields[2] }
                if fields.first == "name_offset", fields.count >= 4, let library = ordinal {
                    rows.insert("\(library) \(fields[3].dropFirst().dropLast())")
                    ordinal = nil
                }
            }
            return rows
        }
        // (table flag, field of the library or nil for the weak-bind table, field of the symbol)
        let tables: [(String, Int?, Int)] = [("--bind", 5, 6), ("--lazy-bind", 3, 4), ("--weak-bind", nil, 5)]
        for (flag, libraryField, symbolField) in tables {
            for line in try await Command.objdump([flag, "--arch=\(arch)", path]).split(separator: "\n") {
                let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
                guard fields.count > symbolField, fields[0].hasPrefix("__") else { continue }
                rows.insert("\(libraryField.map { fields[$0] } ?? "weak") \(fields[symbolField])")
            }
        }
        return rows
    }

    /// The same rows from the reader's ``SymbolImport``s.
    static func readerImports(of image: MachOImage) throws -> Set<String> {
        let chained = image.chainedFixups != nil
        return Set(try image.symbolImports().map { entry in
            let library = chained ? String(entry.libraryOrdinal) : LibraryShortName.forOrdinal(entry.libraryOrdinal, in: image)
            return "\(library) \(entry.name)"
        })
    }
}
