import Foundation
import MachOReader

/// llvm-objdump-19's view of an image's Objective-C metadata, in a form the reader's can be
/// compared with line for line.
///
/// `--objc-meta-data` prints classes and categories with their `class_ro_t`s and method
/// lists, but only for images whose pointers are plain addresses (opcode-based fixups): it
/// does not follow chained pointers. So for a chained image the structural facts (names,
/// types, implementations by symbol, flags) come from the opcode-based build of the same
/// sources and architecture, and the addresses from llvm's own decoding of the chained
/// image: `--dyld-info` (every pointer's target or bound symbol), `--syms` (where each class
/// and method implementation is) and `--section` listings (selector names).
package enum ObjCOracle {
    /// `--syms`: symbol names by address (the first symbol at an address).
    package static func symbols(_ path: String) async throws -> [UInt64: String] {
        var symbols: [UInt64: String] = [:]
        for line in try await Oracle.objdump(["--syms", path]).split(separator: "\n") where line.count > 25 {
            // "0000000100000960 l     F __TEXT,__text +[Square(MainCat) load]": address, 7 flag columns, section, name.
            guard let address = UInt64(line.prefix(16), radix: 16) else { continue }
            let rest = line.dropFirst(25)
            guard let space = rest.firstIndex(of: " ") else { continue }
            let name = String(rest[rest.index(after: space)...])
            if symbols[address] == nil { symbols[address] = name }
        }
        return symbols
    }

    /// Every pointer llvm decodes, by slot address: chained images from `--dyld-info`
    /// (rebase targets and binds), opcode-based ones from `--bind` (binds only: their
    /// rebased pointers hold the target in the file).
    package static func pointers(_ path: String, chained: Bool) async throws -> [UInt64: ObjCPointer] {
        var pointers: [UInt64: ObjCPointer] = [:]
        if chained {
            for line in try await Oracle.objdump(["--dyld-info", path]).split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 6, let address = hex(fields[2]) else { continue }
                if fields[4] == "rebase", let target = hex(fields[5]) {
                    pointers[address] = target == 0 ? .null : .address(target)
                } else if fields[4] == "bind", fields.count >= 8, let addend = hex(fields[5]) {
                    pointers[address] = .symbol(fields[7...].joined(separator: " "), addend: Int64(bitPattern: addend))
                }
            }
        } else {
            for line in try await Oracle.objdump(["--bind", path]).split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 7, let address = hex(fields[2]), let addend = Int64(fields[4]) else { continue }
                pointers[address] = .symbol(fields[6...].joined(separator: " "), addend: addend)
            }
        }
        return pointers
    }

    /// `__objc_selrefs`, in order: each reference's address and selector name. Opcode-based
    /// images: llvm's literal-pointer listing names the string. Chained images: llvm prints
    /// the raw chained pointer, so the name is the `__objc_methname` string at the target
    /// `--dyld-info` decodes.
    package static func selectorReferences(_ path: String, pointers: [UInt64: ObjCPointer], chained: Bool) async throws -> [(slot: UInt64, name: String)] {
        var strings: [UInt64: String] = [:]
        if chained {
            for line in try await Oracle.objdump(["--section=__TEXT,__objc_methname", path]).split(separator: "\n") {
                guard let (address, rest) = addressAndRest(line) else { continue }
                strings[address] = rest
            }
        }
        var references: [(UInt64, String)] = []
        for line in try await Oracle.objdump(["--section=__DATA,__objc_selrefs", path]).split(separator: "\n") {
            guard let (slot, rest) = addressAndRest(line) else { continue }
            if chained {
                guard case let .address(target) = pointers[slot], let name = strings[target] else {
                    throw Oracle.Failure(description: "\(path): selector reference 0x\(String(slot, radix: 16)) has no decoded target")
                }
                references.append((slot, name))
            } else {
                let prefix = "__TEXT:__objc_methname:"
                guard rest.hasPrefix(prefix) else { throw Oracle.Failure(description: "\(path): unexpected selref line \(line)") }
                references.append((slot, String(rest.dropFirst(prefix.count))))
            }
        }
        return references
    }

    /// `--objc-meta-data`, its classes and categories as ``MetadataLines`` lines (other
    /// sections, ivars, protocols and properties left out). A category's `cls`, which llvm
    /// prints as the raw 0 of a bind, is named from `binds`.
    package static func metadataLines(_ path: String, binds: [UInt64: ObjCPointer]) async throws -> [String] {
        var lines: [String] = []
        var section = ""
        var inMethods = false, inIvars = false
        var categoryAddress: UInt64 = 0
        for raw in try await Oracle.objdump(["--objc-meta-data", path]).split(separator: "\n") {
            if raw.hasPrefix("Contents of (") {
                section = raw.contains("__objc_classlist") ? "classlist" : raw.contains("__objc_catlist") ? "catlist" : ""
                continue
            }
            guard !section.isEmpty else { continue }
            if let first = raw.first, first.isHexDigit, let (entry, rest) = addressAndRest(raw) {
                let parts = rest.split(separator: " ", maxSplits: 1)
                let address = hex(parts[0]) ?? 0
                categoryAddress = address
                lines.append("\(section == "classlist" ? "class" : "category") \(MetadataLines.at(entry)) \(MetadataLines.at(address)) \(parts.count > 1 ? String(parts[1]) : "")")
                inMethods = false; inIvars = false
                continue
            }
            if raw == "Meta Class" { lines.append("meta"); inMethods = false; inIvars = false; continue }
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let key = fields.first.map(String.init) else { continue }
            let value = fields.count > 1 ? String(fields[1]) : ""
            let rest = fields.count > 2 ? fields[2...].joined(separator: " ") : ""
            if inIvars { if key == "weakIvarLayout" { inIvars = false } else { continue } }
            if inMethods, !["entsize", "count", "name", "types", "imp"].contains(key) { inMethods = false }
            switch key {
            case "isa", "data":
                lines.append("\(key) \(MetadataLines.at(hex(value) ?? 0))")
            case "superclass":
                lines.append("superclass \(rest.isEmpty ? MetadataLines.at(hex(value) ?? 0) : rest)")
            case "flags":
                lines.append("flags \(value)")
            case "name":
                lines.append("\(inMethods ? "method" : "name") \(MetadataLines.at(hex(value) ?? 0)) \(rest)")
            case "types":
                lines.append("types \(MetadataLines.at(hex(value) ?? 0)) \(rest)")
            case "imp":
                lines.append("imp \(fields.dropFirst().joined(separator: " "))")
            case "entsize", "count":
                if inMethods { lines.append("\(key) \(value)") }
            case "baseMethods", "instanceMethods", "classMethods":
                let address = hex(value) ?? 0
                lines.append("\(key) \(MetadataLines.at(address))")
                inMethods = address != 0
            case "cls":
                let pointer = binds[categoryAddress &+ 8] ?? ((hex(value) ?? 0) == 0 ? .null : .address(hex(value)!))
                lines.append("cls \(MetadataLines.pointer(pointer, symbols: [:]))")
            case "ivars":
                inIvars = (hex(value) ?? 0) != 0
            default:
                continue
            }
        }
        return lines
    }

    static func hex<S: StringProtocol>(_ text: S) -> UInt64? {
        UInt64(text.hasPrefix("0x") ? text.dropFirst(2) : text[...], radix: 16)
    }

    /// "ADDRESS  REST" (a 16-digit address, then blanks).
    static func addressAndRest(_ line: Substring) -> (UInt64, String)? {
        guard line.count > 17, let address = UInt64(line.prefix(16), radix: 16) else { return nil }
        return (address, line.dropFirst(16).trimmingCharacters(in: .whitespaces))
    }
}

/// The reader's classes and categories as the lines ``ObjCOracle/metadataLines(_:binds:)``
/// makes of llvm-objdump's: addresses as `@hex` (``withoutAddresses(_:)`` blanks them for
/// comparisons across builds), implementations and pointers named from llvm's symbol table.
package enum MetadataLines {
    static func at(_ address: UInt64) -> String { "@" + String(address, radix: 16) }

    static func pointer(_ pointer: ObjCPointer, symbols: [UInt64: String]) -> String {
        switch pointer {
        case .null: at(0)
        case let .address(address): symbols[address] ?? at(address)
        case let .symbol(name, _): name
        }
    }

    package static func render(_ image: ObjCFileImage, symbols: [UInt64: String]) throws -> [String] {
        var lines: [String] = []
        func object(_ cls: ObjCClassObjectDescription) {
            lines.append("isa \(at({ if case let .address(a) = cls.isa { a } else { 0 } }()))")
            lines.append("superclass \(pointer(cls.superclass, symbols: symbols))")
            lines.append("data \(at(cls.roAddress))")
            lines.append("flags 0x\(String(cls.flags, radix: 16))")
            lines.append("name \(at(cls.nameAddress)) \(cls.name)")
            lines.append("baseMethods \(at(cls.methods?.address ?? 0))")
            methods(cls.methods)
        }
        func methods(_ list: ObjCMethodListDescription?) {
            guard let list else { return }
            lines.append("entsize \(list.entrySize)")
            lines.append("count \(list.methods.count)")
            for method in list.methods {
                lines.append("method \(at(method.nameAddress)) \(method.name)")
                lines.append("types \(at(method.typesAddress)) \(method.types)")
                lines.append("imp \(symbols[method.imp] ?? "0x" + String(method.imp, radix: 16))")
            }
        }
        for index in 0..<image.classCount {
            let cls = try image.classDescription(index)
            lines.append("class \(at(cls.listEntry)) \(at(cls.cls.address)) \(symbols[cls.cls.address] ?? "")")
            object(cls.cls)
            if let metaclass = cls.metaclass {
                lines.append("meta")
                object(metaclass)
            }
        }
        for index in 0..<image.categoryCount {
            let category = try image.categoryDescription(index)
            lines.append("category \(at(category.listEntry)) \(at(category.address)) \(symbols[category.address] ?? "")")
            lines.append("name \(at(category.nameAddress)) \(category.name)")
            lines.append("cls \(pointer(category.cls, symbols: [:]))")
            lines.append("instanceMethods \(at(category.instanceMethods?.address ?? 0))")
            methods(category.instanceMethods)
            lines.append("classMethods \(at(category.classMethods?.address ?? 0))")
            methods(category.classMethods)
        }
        return lines
    }

    /// `lines` with every `@hex` address blanked to `@`.
    package static func withoutAddresses(_ lines: [String]) -> [String] {
        lines.map { line in
            line.split(separator: " ", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("@") ? "@" : String($0) }.joined(separator: " ")
        }
    }
}
