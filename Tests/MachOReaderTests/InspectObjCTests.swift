import Foundation
@testable import MachOInspect
import MachOReader
import TestSupport
import Testing

/// `dyld3 inspect --objc-summary` and `--objc --json`, against llvm-objdump-19 on every image of the
/// objc fixture app, all four builds (``ObjCOracle``).
@Suite(.bounded) struct InspectObjCTests {
    typealias Image = ObjCReaderTests.Image

    static func json(_ path: String) throws -> [String: Any] {
        var out = ""
        try InspectJSON.write(path: path, file: ByteView(try Corpus.bytes(path)), tables: [.objc], arch: .all, to: &out)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let slice = try #require((document["slices"] as? [[String: Any]])?.first)
        return try #require(slice["objc"] as? [String: Any], "\(path): no objc member")
    }

    static func uint(_ value: Any?) -> UInt64 { (value as? NSNumber)?.uint64Value ?? 0 }

    /// The JSON's classes and categories as ``MetadataLines`` lines.
    static func lines(_ objc: [String: Any], symbols: [UInt64: String]) -> [String] {
        func at(_ value: Any?) -> String { "@" + String(uint(value), radix: 16) }
        func pointer(_ value: Any?) -> String {
            guard let object = value as? [String: Any] else { return "@0" }
            if let symbol = object["symbol"] as? String { return symbol }
            return symbols[uint(object["address"])] ?? at(object["address"])
        }
        var lines: [String] = []
        func methods(_ value: Any?) {
            guard let list = value as? [String: Any], let entries = list["methods"] as? [[String: Any]] else { return }
            lines.append("entsize \(uint(list["entry_size_bytes"]))")
            lines.append("count \(entries.count)")
            for method in entries {
                lines.append("method \(at(method["name_address"])) \(method["name"] as? String ?? "")")
                lines.append("types \(at(method["types_address"])) \(method["types"] as? String ?? "")")
                lines.append("imp \(symbols[uint(method["imp"])] ?? "?")")
            }
        }
        func object(_ cls: [String: Any]) {
            lines.append("isa \((cls["isa"] as? [String: Any]).map { at($0["address"]) } ?? "@0")")
            lines.append("superclass \(pointer(cls["superclass"]))")
            lines.append("data \(at(cls["data"]))")
            lines.append("flags 0x\(String(uint(cls["flags"]), radix: 16))")
            lines.append("name \(at(cls["name_address"])) \(cls["name"] as? String ?? "")")
            lines.append("baseMethods \(at((cls["methods"] as? [String: Any])?["address"]))")
            methods(cls["methods"])
        }
        for entry in objc["classes"] as? [[String: Any]] ?? [] {
            let cls = entry["class"] as? [String: Any] ?? [:]
            lines.append("class \(at(entry["list_entry"])) \(at(cls["address"])) \(symbols[uint(cls["address"])] ?? "")")
            object(cls)
            if let metaclass = entry["metaclass"] as? [String: Any] {
                lines.append("meta")
                object(metaclass)
            }
        }
        for category in objc["categories"] as? [[String: Any]] ?? [] {
            lines.append("category \(at(category["list_entry"])) \(at(category["address"])) \(symbols[uint(category["address"])] ?? "")")
            lines.append("name \(at(category["name_address"])) \(category["name"] as? String ?? "")")
            lines.append("cls \((category["class"] as? [String: Any]).map { $0["symbol"] as? String ?? at($0["address"]) } ?? "@0")")
            for (key, label) in [("instance_methods", "instanceMethods"), ("class_methods", "classMethods")] {
                lines.append("\(label) \(at((category[key] as? [String: Any])?["address"]))")
                methods(category[key])
            }
        }
        return lines
    }

    @Test(arguments: ObjCReaderTests.images) func jsonMatchesObjdump(_ image: Image) async throws {
        let objc = try Self.json(image.path)
        let symbols = try await ObjCOracle.symbols(image.path)
        let twin = image.opcodeTwin
        let expected = try await ObjCOracle.metadataLines(twin.path, binds: try await ObjCOracle.pointers(twin.path, chained: false))
        let actual = Self.lines(objc, symbols: symbols)
        #expect(expected.contains { $0.hasPrefix("method ") })
        if image.chained {
            try ObjCReaderTests.expectSame(MetadataLines.withoutAddresses(expected), MetadataLines.withoutAddresses(actual), image)
        } else {
            try ObjCReaderTests.expectSame(expected, actual, image)
        }
        let pointers = try await ObjCOracle.pointers(image.path, chained: image.chained)
        let references = try await ObjCOracle.selectorReferences(image.path, pointers: pointers, chained: image.chained)
        let json = (objc["selector_references"] as? [[String: Any]] ?? []).map { "\(Self.uint($0["address"])) \($0["name"] as? String ?? "")" }
        #expect(json == references.map { "\($0.slot) \($0.name)" }, "\(image)")
    }

    /// The `--objc-summary` text: a heading per class at its symbol's address with the name llvm shows, and a
    /// line per method with llvm's name and types and the address of llvm's implementation
    /// symbol (`+[Shape load]` → `+load v16@0:8 imp 0x…`).
    @Test(arguments: ObjCReaderTests.images) func textMatchesObjdump(_ image: Image) async throws {
        let text = try ObjdumpReport.render(path: image.path, bytes: try Corpus.bytes(image.path), tables: [.objcSummary], arch: .all)
        let lines = Set(text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let symbols = try await ObjCOracle.symbols(image.path)
        let addresses = Dictionary(symbols.map { ($1, $0) }, uniquingKeysWith: min)
        let twin = image.opcodeTwin
        let expected = try await ObjCOracle.metadataLines(twin.path, binds: try await ObjCOracle.pointers(twin.path, chained: false))
        var checked = 0
        var pending: (name: String, types: String)?
        for line in expected {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            if fields[0] == "class", fields.count == 3 || fields.count == 4, let symbol = line.split(separator: " ").last,
               symbol.hasPrefix("_OBJC_CLASS_$_"), let address = addresses[String(symbol)] {
                let heading = "0x\(String(address, radix: 16)) \(symbol.dropFirst("_OBJC_CLASS_$_".count)) "
                #expect(lines.contains { $0.hasPrefix(heading) }, "\(image): no class heading \(heading)")
                checked += 1
            } else if fields[0] == "method", fields.count == 3 {
                pending = (fields[2], "")
            } else if fields[0] == "types", fields.count == 3, let name = pending?.name {
                pending = (name, fields[2])
            } else if fields[0] == "imp", let (name, types) = pending {
                let symbol = String(line.dropFirst(4))
                let address = try #require(addresses[symbol], "\(image): llvm names \(symbol), not in its symbol table")
                let want = "\(symbol.prefix(1))\(name) \(types) imp 0x\(String(address, radix: 16))"
                #expect(lines.contains(want), "\(image): no line \(want)")
                checked += 1
                pending = nil
            }
        }
        #expect(checked > 0)
    }
}
