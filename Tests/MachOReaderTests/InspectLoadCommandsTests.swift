import Foundation
import MachOInspect
import MachOReader
import TestSupport
import Testing

/// `dyld3 inspect --load-commands` (text and JSON), the summary's platform, versions and
/// header flags, and `--deps`' versions, against `llvm-objdump-19 --macho --private-headers`
/// and `--dylibs-used` on every slice of every corpus file and reader fixture. llvm-objdump's
/// text is read by this file's own parser; ours is read as text and as JSON.
@Suite(.bounded, .serialized) struct InspectLoadCommandsTests {
    /// One `Load command N` block, or one `Section` of it: its `label value` lines in order.
    struct Block {
        var lines: [(label: String, value: String)] = []
        var sections: [Block] = []

        /// The first value of `label`.
        subscript(_ label: String) -> String? { lines.first { $0.label == label }?.value }
        /// Every value of `label`, in order (a build version's tools).
        func all(_ label: String) -> [String] { lines.filter { $0.label == label }.map(\.value) }
    }

    /// What `--private-headers` (or `inspect --load-commands`) says of one slice.
    struct Listing {
        /// The header line's flag words (llvm-objdump's only).
        var headerFlags: [String] = []
        var commands: [Block] = []
    }

    /// Labels of more than one word; any other line is `label value` split at its first blank.
    static let multiWordLabels = ["time stamp", "current version", "compatibility version"]

    /// Parses the `Mach header` and `Load command N` blocks of one slice's text.
    static func parse(_ text: String) -> Listing {
        var listing = Listing()
        var inSection = false
        var headerNext = false
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line == "Mach header" { headerNext = true; continue }
            if headerNext, line.hasPrefix("MH_MAGIC") {
                // magic cputype cpusubtype caps filetype ncmds sizeofcmds flags...
                listing.headerFlags = line.split(separator: " ").dropFirst(7).map(String.init)
                headerNext = false
                continue
            }
            if line.hasPrefix("Load command ") {
                listing.commands.append(Block())
                inSection = false
                continue
            }
            guard !listing.commands.isEmpty else { continue }
            let last = listing.commands.count - 1
            if line == "Section" {
                listing.commands[last].sections.append(Block())
                inSection = true
                continue
            }
            let label: String
            if let known = multiWordLabels.first(where: { line.hasPrefix($0 + " ") }) {
                label = known
            } else if line.hasPrefix("string #") {
                label = "string #" + line.dropFirst("string #".count).prefix { $0 != " " }
            } else {
                label = String(line.prefix { $0 != " " })
            }
            let value = String(line.dropFirst(label.count)).trimmingCharacters(in: .whitespaces)
            if inSection {
                listing.commands[last].sections[listing.commands[last].sections.count - 1].lines.append((label, value))
            } else {
                listing.commands[last].lines.append((label, value))
            }
        }
        return listing
    }

    // MARK: - Normal forms, so both sides' notes and spellings compare

    /// A number's first word: llvm-objdump appends notes (`Incorrect size`, `(past end of file)`).
    static func firstWord(_ value: String?) -> String? { value?.split(separator: " ").first.map(String.init) }

    /// A name without llvm-objdump's ` (offset N)`.
    static func name(_ value: String?) -> String? {
        guard let value else { return nil }
        if let range = value.range(of: " (offset ", options: .backwards), value.hasSuffix(")") { return String(value[..<range.lowerBound]) }
        return value
    }

    /// `X.Y.Z` with missing components as 0 (llvm-objdump leaves out a zero `.Z`); `n/a` stays.
    static func version(_ value: String?) -> String? {
        guard let value = firstWord(value), value != "n/a" else { return firstWord(value) }
        var parts = value.split(separator: ".").map(String.init)
        while parts.count < 3 { parts.append("0") }
        return parts.joined(separator: ".")
    }

    static func hexValue(_ value: String?) -> UInt64? {
        guard let word = firstWord(value), word.hasPrefix("0x") else { return nil }
        return UInt64(word.dropFirst(2), radix: 16)
    }

    /// llvm-objdump's build-version platform words as `PLATFORM_*` numbers (`<mach-o/loader.h>`).
    static let platformNumbers: [String: UInt64] = [
        "macos": 1, "ios": 2, "tvos": 3, "watchos": 4, "bridgeos": 5, "macCatalyst": 6, "iossimulator": 7, "tvossimulator": 8,
        "watchossimulator": 9, "driverkit": 10, "xros": 11, "xrossimulator": 12,
    ]

    /// The platform names the summary promises, by `PLATFORM_*` number.
    static let platformNames: [UInt64: String] = [
        1: "macOS", 2: "iOS", 3: "tvOS", 4: "watchOS", 5: "bridgeOS", 6: "Mac Catalyst", 7: "iOS simulator",
        8: "tvOS simulator", 9: "watchOS simulator", 10: "DriverKit", 11: "visionOS", 12: "visionOS simulator",
    ]

    static let dylibCommands: Set<String> = [
        "LC_LOAD_DYLIB", "LC_ID_DYLIB", "LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_LOAD_UPWARD_DYLIB", "LC_LAZY_LOAD_DYLIB",
    ]
    static let linkeditDataCommands: Set<String> = [
        "LC_CODE_SIGNATURE", "LC_FUNCTION_STARTS", "LC_DATA_IN_CODE", "LC_DYLD_CHAINED_FIXUPS", "LC_DYLD_EXPORTS_TRIE",
        "LC_SEGMENT_SPLIT_INFO", "LC_DYLIB_CODE_SIGN_DRS", "LC_LINKER_OPTIMIZATION_HINT", "LC_ATOM_INFO",
    ]

    // MARK: - One slice

    /// The key fields of each command, as (what, llvm-objdump's value, ours): numbers by their
    /// first word, versions as X.Y.Z, names without their offset.
    static func keyFields(_ block: Block) -> [(String, String?)] {
        let cmd = block["cmd"] ?? ""
        var fields: [(String, String?)] = [("cmd", block["cmd"]), ("cmdsize", firstWord(block["cmdsize"]))]
        func words(_ labels: [String]) { fields += labels.map { ($0, firstWord(block[$0])) } }
        switch cmd {
        case "LC_SEGMENT_64":
            fields += [("segname", block["segname"]), ("vmaddr", block["vmaddr"]), ("vmsize", block["vmsize"])]
            words(["fileoff", "filesize", "maxprot", "initprot", "nsects"])
            for (index, section) in block.sections.enumerated() {
                fields += ["sectname", "segname", "addr", "size", "offset"].map { ("section \(index) \($0)", firstWord(section[$0])) }
            }
        case _ where dylibCommands.contains(cmd):
            fields += [("name", name(block["name"])), ("current version", version(block["current version"])),
                       ("compatibility version", version(block["compatibility version"]))]
        case "LC_LOAD_DYLINKER", "LC_ID_DYLINKER", "LC_DYLD_ENVIRONMENT":
            fields.append(("name", name(block["name"])))
        case "LC_RPATH":
            fields.append(("path", name(block["path"])))
        case "LC_UUID":
            fields.append(("uuid", block["uuid"]))
        case "LC_MAIN":
            words(["entryoff", "stacksize"])
        case _ where linkeditDataCommands.contains(cmd):
            words(["dataoff", "datasize"])
        case "LC_SYMTAB":
            words(["symoff", "nsyms", "stroff", "strsize"])
        case "LC_DYSYMTAB":
            words(["ilocalsym", "nlocalsym", "iextdefsym", "nextdefsym", "iundefsym", "nundefsym", "tocoff", "ntoc", "modtaboff",
                   "nmodtab", "extrefsymoff", "nextrefsyms", "indirectsymoff", "nindirectsyms", "extreloff", "nextrel", "locreloff", "nlocrel"])
        case "LC_DYLD_INFO", "LC_DYLD_INFO_ONLY":
            words(["rebase_off", "rebase_size", "bind_off", "bind_size", "weak_bind_off", "weak_bind_size",
                   "lazy_bind_off", "lazy_bind_size", "export_off", "export_size"])
        case "LC_BUILD_VERSION":
            fields += [("minos", version(block["minos"])), ("sdk", version(block["sdk"])), ("ntools", firstWord(block["ntools"]))]
            fields += block.all("tool").enumerated().map { ("tool \($0.offset)", $0.element) }
            fields += block.all("version").enumerated().map { ("tool version \($0.offset)", version($0.element)) }
        case "LC_VERSION_MIN_MACOSX", "LC_VERSION_MIN_IPHONEOS", "LC_VERSION_MIN_TVOS", "LC_VERSION_MIN_WATCHOS":
            fields += [("version", version(block["version"])), ("sdk", version(block["sdk"]))]
        case "LC_SOURCE_VERSION":
            fields.append(("source version", block["version"]))
        case "LC_ENCRYPTION_INFO_64", "LC_ENCRYPTION_INFO":
            words(["cryptoff", "cryptsize", "cryptid", "pad"])
        default:
            break
        }
        return fields
    }

    /// The JSON command's value for one key field (the same normal forms as ``keyFields(_:)``).
    static func jsonField(_ command: [String: Any], _ what: String) -> String? {
        func string(_ key: String) -> String? { command[key] as? String }
        func number(_ key: String) -> String? { (command[key] as? NSNumber).map { $0.stringValue } }
        func hex(_ key: String) -> String? {
            (command[key] as? NSNumber).map { "0x" + String(repeating: "0", count: max(0, 16 - String($0.uint64Value, radix: 16).count)) + String($0.uint64Value, radix: 16) }
        }
        if what.hasPrefix("section ") {
            let parts = what.split(separator: " ")
            let sections = command["sections"] as? [[String: Any]] ?? []
            guard let index = Int(parts[1]), index < sections.count else { return nil }
            let section = sections[index]
            switch parts[2] {
            case "addr", "size": return (section[String(parts[2])] as? NSNumber).map { "0x" + String(repeating: "0", count: max(0, 16 - String($0.uint64Value, radix: 16).count)) + String($0.uint64Value, radix: 16) }
            case "offset": return (section["offset"] as? NSNumber)?.stringValue
            default: return section[String(parts[2])] as? String
            }
        }
        if what.hasPrefix("tool ") {
            let tools = command["tools"] as? [[String: Any]] ?? []
            let parts = what.split(separator: " ")
            guard let index = Int(parts.last!), index < tools.count else { return nil }
            return parts[1] == "version" ? version(tools[index]["version"] as? String) : tools[index]["tool"] as? String
        }
        switch what {
        case "cmd", "segname", "maxprot", "initprot", "name", "path", "uuid": return string(what)
        case "vmaddr", "vmsize": return hex(what)
        case "source version": return string("version")
        case "current version": return string("current_version")
        case "compatibility version": return string("compatibility_version")
        case "minos", "version": return version(string(what))
        case "sdk": return command["sdk"] is NSNull ? "n/a" : version(string("sdk"))
        default: return number(what)
        }
    }

    /// Compares one slice: llvm-objdump's listing against our text and our JSON, command by
    /// command. Returns the fields compared.
    static func compareSlice(_ path: String, arch: String) async throws -> Int {
        let bytes = try Corpus.bytes(path)
        let objdump = parse(try await Oracle.objdump(["--private-headers", "--arch=\(arch)", path]))
        let text = parse(try ObjdumpReport.render(path: path, bytes: bytes, tables: [.loadCommands], arch: .named(arch)))
        var jsonText = ""
        try InspectJSON.write(path: path, file: ByteView(bytes), tables: [.loadCommands], arch: .named(arch), to: &jsonText)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(jsonText.utf8)) as? [String: Any])
        let slice = try #require((document["slices"] as? [[String: Any]])?.first)
        let json = slice["load_commands"] as? [[String: Any]] ?? []

        let context = "\(path) [\(arch)]"
        #expect(text.commands.count == objdump.commands.count, "\(context): text has \(text.commands.count) load commands, llvm-objdump \(objdump.commands.count)")
        #expect(json.count == objdump.commands.count, "\(context): JSON has \(json.count) load commands, llvm-objdump \(objdump.commands.count)")
        var compared = 0
        for (index, theirs) in objdump.commands.enumerated() where index < text.commands.count && index < json.count {
            let ours = Dictionary(keyFields(text.commands[index]).map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
            for (what, want) in keyFields(theirs) {
                #expect(ours[what] ?? nil == want, "\(context) load command \(index) \(what): text \(ours[what] ?? nil ?? "none"), llvm-objdump \(want ?? "none")")
                let fromJSON = what == "cmdsize" ? (json[index]["cmdsize"] as? NSNumber)?.stringValue : jsonField(json[index], what)
                #expect(fromJSON == want, "\(context) load command \(index) \(what): JSON \(fromJSON ?? "none"), llvm-objdump \(want ?? "none")")
                compared += 2
            }
            #expect(json[index]["index"] as? Int == index, "\(context) load command \(index): JSON index")
            if theirs["cmd"] == "LC_BUILD_VERSION" {
                let platform = platformNumbers[theirs["platform"] ?? ""]
                #expect(platform != nil && (json[index]["platform"] as? NSNumber)?.uint64Value == platform,
                        "\(context) load command \(index): platform \(json[index]["platform"] ?? "none"), llvm-objdump \(theirs["platform"] ?? "none")")
                compared += 1
            }
        }
        return compared
    }

    static func compareAll(_ files: [String]) async throws -> Int {
        var compared = 0
        for path in files {
            for arch in try Corpus.architectures(path) { compared += try await compareSlice(path, arch: arch) }
        }
        return compared
    }

    @Test func corpusLoadCommandsMatchPrivateHeaders() async throws {
        let compared = try await Self.compareAll(try Corpus.machOFiles())
        #expect(compared > 5000)
        print("oracle: \(compared) --load-commands fields (text and JSON) compared with llvm-objdump-19 --private-headers (corpus)")
    }

    @Test func fixtureLoadCommandsMatchPrivateHeaders() async throws {
        let compared = try await Self.compareAll(try Corpus.machOFiles(under: Paths.readerFixtures))
        #expect(compared > 500)
        print("oracle: \(compared) --load-commands fields (text and JSON) compared with llvm-objdump-19 --private-headers (fixtures)")
    }

    // MARK: - The summary

    /// The summary's platform, minimum OS, SDK and header flags, in text and JSON, against the
    /// header line and the first LC_BUILD_VERSION or LC_VERSION_MIN_* llvm-objdump prints.
    @Test func summaryNamesPlatformVersionsAndFlags() async throws {
        var compared = 0
        for path in try Corpus.machOFiles() + Corpus.machOFiles(under: Paths.readerFixtures) {
            let bytes = try Corpus.bytes(path)
            for arch in try Corpus.architectures(path) {
                let context = "\(path) [\(arch)]"
                let objdump = Self.parse(try await Oracle.objdump(["--private-headers", "--arch=\(arch)", path]))
                let raw = try await Oracle.objdump(["--private-headers", "--non-verbose", "--arch=\(arch)", path])
                let rawFlags = raw.split(separator: "\n").first { $0.hasPrefix(" 0xfeedfacf") }.flatMap { $0.split(separator: " ").last }

                // The target llvm-objdump shows first: a build version, or a version-min command.
                var platform: String?, minOS: String?, sdk: String?
                if let command = objdump.commands.first(where: { ($0["cmd"] ?? "").hasPrefix("LC_BUILD_VERSION") || ($0["cmd"] ?? "").hasPrefix("LC_VERSION_MIN_") }) {
                    let x86 = arch.hasPrefix("x86_64") || arch == "i386"
                    switch command["cmd"] {
                    case "LC_BUILD_VERSION": platform = Self.platformNumbers[command["platform"] ?? ""].flatMap { Self.platformNames[$0] }; minOS = Self.version(command["minos"])
                    case "LC_VERSION_MIN_MACOSX": platform = "macOS"; minOS = Self.version(command["version"])
                    case "LC_VERSION_MIN_IPHONEOS": platform = x86 ? "iOS simulator" : "iOS"; minOS = Self.version(command["version"])
                    case "LC_VERSION_MIN_TVOS": platform = x86 ? "tvOS simulator" : "tvOS"; minOS = Self.version(command["version"])
                    default: platform = x86 ? "watchOS simulator" : "watchOS"; minOS = Self.version(command["version"])
                    }
                    sdk = Self.version(command["sdk"])
                }

                var jsonText = ""
                try InspectJSON.write(path: path, file: ByteView(bytes), tables: [.deps], arch: .named(arch), to: &jsonText)
                let document = try #require(try JSONSerialization.jsonObject(with: Data(jsonText.utf8)) as? [String: Any])
                let slice = try #require((document["slices"] as? [[String: Any]])?.first)
                #expect(slice["platform"] as? String == platform, "\(context): JSON platform \(slice["platform"] ?? "none"), llvm-objdump \(platform ?? "none")")
                #expect(slice["min_os"] as? String == minOS, "\(context): JSON min_os \(slice["min_os"] ?? "none"), llvm-objdump \(minOS ?? "none")")
                #expect((slice["sdk"] as? String ?? (platform == nil ? nil : "n/a")) == sdk, "\(context): JSON sdk \(slice["sdk"] ?? "none"), llvm-objdump \(sdk ?? "none")")

                let summary = try ImageSummary.render(path: path, bytes: bytes, arch: .named(arch)).split(separator: "\n")
                func summaryLine(_ label: String) -> String? {
                    summary.first { $0.hasPrefix("  " + label + " ") }.map { $0.dropFirst(label.count + 2).trimmingCharacters(in: .whitespaces) }
                }
                #expect(summaryLine("platform") == platform && summaryLine("min OS") == minOS && summaryLine("SDK") == sdk,
                        "\(context): summary \(summaryLine("platform") ?? "none") \(summaryLine("min OS") ?? "none") \(summaryLine("SDK") ?? "none"), llvm-objdump \(platform ?? "none") \(minOS ?? "none") \(sdk ?? "none")")

                // Flags: every name llvm-objdump prints (some with MH_, most without), the same
                // raw value; with no bits left unnamed by llvm-objdump, exactly its names.
                let names = slice["flag_names"] as? [String] ?? []
                let ours = Set(names.map { $0.hasPrefix("MH_") ? String($0.dropFirst(3)) : $0 })
                let theirs = objdump.headerFlags.map { $0.hasPrefix("MH_") ? String($0.dropFirst(3)) : $0 }
                let theirNames = Set(theirs.filter { !$0.hasPrefix("0x") })
                #expect(theirNames.isSubset(of: ours), "\(context): flags \(names), llvm-objdump \(objdump.headerFlags)")
                if theirs.allSatisfy({ !$0.hasPrefix("0x") }) { #expect(ours == theirNames, "\(context): flags \(names), llvm-objdump \(objdump.headerFlags)") }
                let rawValue = (slice["flags"] as? NSNumber).map { "0x" + String(repeating: "0", count: max(0, 8 - String($0.uint64Value, radix: 16).count)) + String($0.uint64Value, radix: 16) }
                #expect(rawValue == rawFlags.map { String($0) }, "\(context): flags \(rawValue ?? "none"), llvm-objdump \(rawFlags.map { String($0) } ?? "none")")
                let textFlags = summaryLine("flags")
                #expect(textFlags == (rawValue ?? "") + (names.isEmpty ? "" : " " + names.joined(separator: " | ")), "\(context): summary flags \(textFlags ?? "none")")
                compared += 1
            }
        }
        #expect(compared > 40)
        print("oracle: \(compared) slice summaries compared with llvm-objdump-19 --private-headers")
    }

    // MARK: - Every slice, and --deps' versions

    /// `inspect --deps` without --arch prints every slice of a universal file, in text as in
    /// JSON, each dependency with the versions `llvm-objdump --dylibs-used` prints.
    @Test func depsShowEverySliceWithVersions() async throws {
        var compared = 0
        for path in try Corpus.machOFiles() + Corpus.machOFiles(under: Paths.readerFixtures) {
            let architectures = try Corpus.architectures(path)
            guard architectures.count > 1 || compared < 3 else { continue }
            let text = try await Dyld3Binary.run(["inspect", "--deps", path])
            let json = try await Dyld3Binary.run(["inspect", "--deps", "--json", path])
            #expect(text.status == 0 && json.status == 0, "\(path): \(text.stderr) \(json.stderr)")
            let slices = json.json?["slices"] as? [[String: Any]] ?? []
            #expect(slices.compactMap { $0["arch"] as? String } == architectures, "\(path): JSON slices")
            let blocks = text.stdout.components(separatedBy: "Dependencies:\n").dropFirst()
            #expect(blocks.count == architectures.count, "\(path): \(blocks.count) text blocks for \(architectures.count) slices")
            for (arch, block) in zip(architectures, blocks) {
                // llvm-objdump: "\tNAME (compatibility version X, current version Y[, weak])", the id first.
                let listed = try await Oracle.objdump(["--dylibs-used", "--arch=\(arch)", path]).split(separator: "\n")
                    .filter { $0.hasPrefix("\t") }.map { line -> String in
                        let parts = line.dropFirst().components(separatedBy: ", current version ")
                        let current = parts.count > 1 ? parts[1].prefix { $0 != "," && $0 != ")" } : ""
                        return parts[0] + ", current version " + current + ")"
                    }
                // Ours: "  ORDINAL KIND NAME (compatibility version X, current version Y)".
                let ours = block.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("  id ") && !$0.hasPrefix("  rpath ") }
                    .map { line in
                        String(line.drop { $0 == " " }.drop { $0 != " " }.drop { $0 == " " }.drop { $0 != " " }.drop { $0 == " " })
                    }
                let hasID = block.hasPrefix("  id ")
                #expect(Array(listed.dropFirst(hasID ? 1 : 0)) == ours, "\(path) [\(arch)]: --deps \(ours), llvm-objdump \(listed)")
                compared += 1
            }
        }
        #expect(compared > 3)
    }

    /// `inspect --load-commands` without --arch prints every slice of a universal file, text
    /// and JSON alike.
    @Test func loadCommandsShowEverySlice() async throws {
        let universal = try #require(try Corpus.machOFiles().first { try Corpus.architectures($0).count > 1 })
        let architectures = try Corpus.architectures(universal)
        let text = try await Dyld3Binary.run(["inspect", "--load-commands", universal])
        let json = try await Dyld3Binary.run(["inspect", "--load-commands", "--json", universal])
        #expect(text.status == 0 && json.status == 0, "\(text.stderr) \(json.stderr)")
        #expect(text.lines.filter { $0 == "Load command 0" }.count == architectures.count)
        #expect(architectures.allSatisfy { arch in text.lines.contains("\(universal) (architecture \(arch)):") })
        let slices = json.json?["slices"] as? [[String: Any]] ?? []
        #expect(slices.count == architectures.count && slices.allSatisfy { ($0["load_commands"] as? [Any])?.isEmpty == false })
    }
}
