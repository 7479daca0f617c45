import ArgumentParser
import Foundation
import LaunchPlan
import LoaderCore
import MachOInspect

/// `dyld3 inspect FILE`: the reader's view of a Mach-O file, in llvm-objdump's table
/// formats or as JSON.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print a Mach-O file's load commands, dependencies, fixups, exports and Objective-C metadata.",
        discussion: """
            Each table flag prints the same rows as `llvm-objdump-19 --macho <flag> --arch=all` \
            (--objc: --objc-meta-data). For \
            opcode-based files --dyld-info also lists the opcode streams' rebases and binds, \
            which llvm-objdump leaves out. --load-commands prints the fields of its \
            --private-headers. With no table flag, a summary is printed. Every slice \
            of a universal file is printed, in text as in JSON, unless --arch names one.
            """)

    @Argument(help: "Mach-O files, thin or universal; a .app directory means its executable. Each is inspected in turn; --json prints one object per file.")
    var files: [String]

    @Option(help: "The slice to inspect: an architecture name, or 'all' (the default).") var arch: String?
    @Option(help: "A dyld shared cache's image, by install name: its summary, or the tables asked for (text).") var image: String?
    @Flag(help: "The rebase opcodes.") var rebase = false
    @Flag(help: "The bind opcodes.") var bind = false
    @Flag(help: "The lazy-bind opcodes.") var lazyBind = false
    @Flag(help: "The weak-bind opcodes.") var weakBind = false
    @Flag(help: "Every fixup, chained or opcode-based, with its on-disk pointer.") var dyldInfo = false
    @Flag(help: "The LC_DYLD_CHAINED_FIXUPS structures.") var chainedFixups = false
    @Flag(help: "The exported symbols.") var exportsTrie = false
    @Flag(help: "Dependent dylibs with link kinds, rpaths and the dylib id.") var deps = false
    @Flag(help: "The Objective-C metadata: classes, class and super references, categories, protocols, message references, image info (llvm-objdump's --objc-meta-data).") var objc = false
    @Flag(help: "A compact view of the Objective-C metadata with rebases and binds applied: classes, categories and selector references (as otool -ov, dyld_info -objc).") var objcSummary = false
    @Flag(help: "The embedded code signature: SuperBlob, CodeDirectories (with cdHashes), requirements, entitlements, CMS wrapper.") var codeSignature = false
    @Flag(help: "Thread-local variables: each __thread_vars descriptor (variable, offset, what its thunk is bound to) and the template sections.") var threadLocals = false
    @Flag(help: "Interposing tuples: each __interpose (replacement, replacee) pair, named.") var interpose = false
    @Flag(help: "Every load command in order with its fields: segments and their sections, dylibs with their versions, build version, uuid, entry point, linkedit blobs, ... (the fields of llvm-objdump's --private-headers, otool -l).") var loadCommands = false
    @Flag(help: "Print JSON instead of text.") var json = false
    @Flag(help: "Decode every fixup and export, and report counts and decoding time.") var stats = false

    var tables: Set<InspectTable> {
        let flags: [(Bool, InspectTable)] = [
            (rebase, .rebase), (bind, .bind), (lazyBind, .lazyBind), (weakBind, .weakBind), (dyldInfo, .dyldInfo),
            (chainedFixups, .chainedFixups), (exportsTrie, .exportsTrie), (deps, .deps), (objc, .objc), (objcSummary, .objcSummary),
            (codeSignature, .codeSignature), (threadLocals, .threadLocals), (interpose, .interpose), (loadCommands, .loadCommands),
        ]
        return Set(flags.filter(\.0).map(\.1))
    }

    func run() throws {
        var failed = false
        for name in files {
            do {
                try inspect(try AppLocator.mainImage(of: name))
            } catch {
                CommandFailure(error).report(json: json)
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// Prints one file; its errors are the caller's to report.
    func inspect(_ file: String) throws {
        let bytes = try ImageFile.mapRegularFile(file)
        if (try? bytes.bytes(0, 7)) == Array("dyld_v1".utf8) { return try SharedCacheCommand.inspect(file, bytes: bytes, json: json, image: image, tables: tables) }
        if let image { throw CommandFailure(what: "--image \(image)", why: "\(file) is not a dyld shared cache", kind: "usage") }
        // Every slice unless one is named (llvm-objdump's own default is the host's slice).
        let selection: ArchSelection = arch == nil ? .all : ArchSelection(arch)
        var out = StandardOutput()
        // Tables go out as they are decoded; what was written before an error stays.
        defer { out.flush() }
        if stats {
            out.write(try InspectStatistics.render(path: file, file: bytes, arch: selection))
        } else if json {
            try InspectJSON.write(path: file, file: bytes, tables: tables, arch: selection, to: &out)
        } else if tables.isEmpty {
            try ImageSummary.write(path: file, file: bytes, arch: selection, to: &out)
        } else {
            try ObjdumpReport.write(path: file, file: bytes, tables: tables, arch: selection, to: &out)
        }
    }
}
