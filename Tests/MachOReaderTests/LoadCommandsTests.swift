import TestSupport
import Foundation
import MachOInspect
import MachOReader
import Testing

/// The reader's header and load commands against `llvm-objdump --macho --private-headers`,
/// for every slice of every corpus file and reader fixture.
@Suite(.bounded) struct LoadCommandsTests {
    /// One `Load command N` block of llvm-objdump's output: its fields, and its sections' fields.
    struct ObjdumpCommand {
        var fields: [String: String] = [:]
        var sections: [[String: String]] = []
    }

    /// Parses `--private-headers` text into load-command blocks of `key value` lines.
    static func objdumpCommands(_ text: String) -> [ObjdumpCommand] {
        var commands: [ObjdumpCommand] = []
        var inSection = false
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Load command ") {
                commands.append(ObjdumpCommand())
                inSection = false
                continue
            }
            guard !commands.isEmpty else { continue }
            if line == "Section" {
                commands[commands.count - 1].sections.append([:])
                inSection = true
                continue
            }
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let (key, value) = (String(parts[0]), String(parts[1]).trimmingCharacters(in: .whitespaces))
            if inSection {
                commands[commands.count - 1].sections[commands[commands.count - 1].sections.count - 1][key] = value
            } else {
                commands[commands.count - 1].fields[key] = value
            }
        }
        return commands
    }

    static func hex16(_ value: UInt64) -> String { "0x" + String(repeating: "0", count: 16 - String(value, radix: 16).count) + String(value, radix: 16) }

    /// Compares one image with llvm-objdump's view of it; returns the number of fields checked.
    static func compare(_ image: MachOImage, _ expected: [ObjdumpCommand], context: String) -> Int {
        var checked = 0
        func check(_ got: String?, _ want: String?, _ what: String) {
            #expect(got == want, "\(context): \(what)")
            checked += 1
        }
        check(String(image.loadCommands.count), String(expected.count), "load command count")
        for (command, objdump) in zip(image.loadCommands, expected) {
            let where_ = "load command at 0x\(String(command.offset, radix: 16))"
            check(command.type.name ?? "", objdump.fields["cmd"], "\(where_) cmd")
            check(String(command.size), objdump.fields["cmdsize"], "\(where_) cmdsize")
            /// Each decimal field against objdump's field of that name.
            func numbers(_ fields: KeyValuePairs<String, any BinaryInteger>) {
                for (name, value) in fields { check("\(value)", objdump.fields[name], "\(where_) \(name)") }
            }
            switch command.payload {
            case let .segment(segment):
                check(segment.name, objdump.fields["segname"], "\(where_) segname")
                check(hex16(segment.vmAddress), objdump.fields["vmaddr"], "\(where_) vmaddr")
                check(hex16(segment.vmSize), objdump.fields["vmsize"], "\(where_) vmsize")
                check(String(segment.fileOffset), objdump.fields["fileoff"], "\(where_) fileoff")
                check(String(segment.fileSize), objdump.fields["filesize"], "\(where_) filesize")
                check(segment.initialProtection.description, objdump.fields["initprot"], "\(where_) initprot")
                check(String(segment.sections.count), String(objdump.sections.count), "\(where_) nsects")
                for (section, fields) in zip(segment.sections, objdump.sections) {
                    check(section.name, fields["sectname"], "\(where_) sectname")
                    check(hex16(section.address), fields["addr"], "\(where_) \(section.name) addr")
                    check(hex16(section.size), fields["size"], "\(where_) \(section.name) size")
                    check(String(section.fileOffset), fields["offset"], "\(where_) \(section.name) offset")
                }
            case let .dylib(_, dylib), let .idDylib(dylib):
                check("\(dylib.installName) (offset 24)", objdump.fields["name"], "\(where_) name")
            case let .rpath(path):
                check(path, objdump.fields["path"]?.components(separatedBy: " (offset").first, "\(where_) path")
            case let .uuid(bytes):
                check(bytes.uuidString, objdump.fields["uuid"], "\(where_) uuid")
            case let .main(entry):
                numbers(["entryoff": entry.entryOffset, "stacksize": entry.stackSize])
            case let .symtab(table):
                numbers(["symoff": table.symbolOffset, "nsyms": table.symbolCount, "stroff": table.stringOffset, "strsize": table.stringSize])
            case let .dysymtab(table):
                for (name, value) in zip(DysymtabCommand.fieldNames, table.fields) { check("\(value)", objdump.fields[name], "\(where_) \(name)") }
            case let .dyldInfo(info):
                numbers([
                    "rebase_off": info.rebase.dataOffset, "bind_size": info.bind.dataSize, "weak_bind_off": info.weakBind.dataOffset,
                    "lazy_bind_size": info.lazyBind.dataSize, "export_off": info.export.dataOffset,
                ])
            case let .linkeditData(data):
                numbers(["dataoff": data.dataOffset, "datasize": data.dataSize])
            case let .dylinker(name):
                check("\(name) (offset 12)", objdump.fields["name"], "\(where_) name")
            case .buildVersion, .versionMin, .raw:
                break
            }
        }
        return checked
    }

    static func compareFile(_ path: String) async throws -> Int {
        let file = try UniversalFile(parsing: try Corpus.bytes(path))
        var checked = 0
        for slice in file.slices {
            let text = try await Oracle.objdump(["--private-headers", "--arch=\(slice.cpu.name)", path])
            checked += compare(try file.image(slice), objdumpCommands(text), context: "\(path) [\(slice.cpu.name)]")
        }
        return checked
    }

    @Test func corpusLoadCommandsMatchObjdump() async throws {
        var checked = 0
        for path in try Corpus.machOFiles() { checked += try await Self.compareFile(path) }
        #expect(checked > 1000)
        print("oracle: \(checked) load-command fields compared with llvm-objdump-19 --private-headers (corpus)")
    }

    @Test func fixtureLoadCommandsMatchObjdump() async throws {
        var checked = 0
        for path in try Corpus.machOFiles(under: Paths.readerFixtures) { checked += try await Self.compareFile(path) }
        #expect(checked > 100)
        print("oracle: \(checked) load-command fields compared with llvm-objdump-19 --private-headers (fixtures)")
    }

    @Test func dependenciesMatchDylibsUsed() async throws {
        var compared = 0
        for path in try Corpus.machOFiles() {
            let file = try UniversalFile(parsing: try Corpus.bytes(path))
            for slice in file.slices {
                let image = try file.image(slice)
                let text = try await Oracle.objdump(["--dylibs-used", "--arch=\(slice.cpu.name)", path])
                // llvm lists LC_ID_DYLIB first when present, then every dependency, one per tab-indented line.
                let listed = text.split(separator: "\n").filter { $0.hasPrefix("\t") }.map {
                    String($0.dropFirst().split(separator: " (")[0])
                }
                let ours = (image.id.map { [$0.installName] } ?? []) + image.dependencies.map(\.installName)
                #expect(listed == ours, "\(path) [\(slice.cpu.name)]")
                compared += 1
            }
        }
        #expect(compared > 0)
    }
}
