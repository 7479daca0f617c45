import ArgumentParser
import Foundation
import ClosureCache
import LoaderCore
import MachOInspect
import MachOReader

/// `dyld3 codesign`: embedded code signatures.
struct CodesignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codesign",
        abstract: "Check the embedded code signatures of Mach-O files, or sign one again ad hoc.",
        subcommands: [CodesignVerifyCommand.self, CodesignSignCommand.self])
}

/// `dyld3 codesign verify FILE...`: every page and checkable blob against its CodeDirectory.
struct CodesignVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify the embedded code signature of each slice of each file.",
        discussion: """
            For each selected slice: every CodeDirectory is read (every bound checked) and its \
            cdHash taken (its hash, truncated to 20 bytes; the strongest hash type's names the \
            image); every code slot is checked against the hash of its page of the file up to \
            the code limit (the last page short); the requirements, entitlements and other blobs \
            a special slot seals are checked against it. The CMS signature is not validated and \
            requirements are not evaluated (docs/code-signing.md).
            Prints one line per slice (PATH (ARCH): valid, cdhash ..., or unsigned, or INVALID \
            and one line per problem naming the page and its file offset, or the blob); --json \
            prints an array of one object per slice.
            Exit status: 0 when every selected slice is signed and valid; 3 when any signature \
            is invalid or cannot be read; else 1 when a file cannot be read as a Mach-O file; \
            else 2 when any slice is unsigned.
            """)

    static let unsignedExitCode: Int32 = 2
    static let invalidExitCode: Int32 = 3

    @Argument(help: "Mach-O files: thin or universal.") var files: [String]
    @Option(help: "The slices to verify: an architecture name, or 'all' (the default).") var arch: String = "all"
    @Flag(help: "Print JSON: an array of one object per slice.") var json = false

    func run() throws {
        var results: [SignatureVerification] = []
        var unreadable = false
        for file in files {
            do {
                let bytes = try ImageFile.mapRegularFile(file)
                results.append(try SignatureVerification(path: file, file: bytes, arch: ArchSelection(arch)))
            } catch {
                printError("dyld3: codesign verify: \(error)")
                unreadable = true
            }
        }
        var out = StandardOutput()
        if json {
            out.write(JSONValue.array(results.flatMap { $0.jsonObjects() }).serialized() + "\n")
        } else {
            for line in results.flatMap({ $0.textLines() }) { out.write(line + "\n") }
        }
        out.flush()
        let slices = results.flatMap(\.slices)
        if slices.contains(where: { $0.signed && !$0.valid }) { throw ExitCode(Self.invalidExitCode) }
        if unreadable { throw ExitCode(1) }
        if slices.contains(where: { !$0.signed }) { throw ExitCode(Self.unsignedExitCode) }
    }
}

/// `dyld3 codesign sign --adhoc FILE`: the linker's ad-hoc signature written again over a
/// (patched) image's current bytes, in its `LC_CODE_SIGNATURE` range.
struct CodesignSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a thin image again ad hoc, in place, as ld64.lld signs its output.",
        discussion: """
            The image must already carry LC_CODE_SIGNATURE (the range is reused; nothing else \
            moves). The identifier is the current signature's, else the install name's or the \
            file's last component. The file (or --out) is replaced atomically, its mode kept \
            (docs/code-signing.md).
            """)

    @Flag(help: "An ad-hoc signature (the only kind written).") var adhoc = false
    @Argument(help: "A thin Mach-O image.") var file: String
    @Option(help: "Write the signed image here instead of replacing FILE.") var out: String?
    @Option(help: "The CodeDirectory's identifier (default: the current one).") var identifier: String?

    func run() throws {
        guard adhoc else { throw ValidationError("give --adhoc: only ad-hoc signatures are written") }
        do {
            try sign()
        } catch {
            // One line that starts with the file (a load error already names it).
            var line = "\(error)".hasPrefix(file) ? "\(error)" : "\(file): \(error)"
            if let error = error as? MachOError, let signature = error.codeSignature {
                line = "\(file): offset \(hex(error.offset)): \(signature.structure): \(signature.what)"
            }
            printError("dyld3: \(line)")
            throw ExitCode(1)
        }
    }

    func sign() throws {
        let view = try ImageFile.mapRegularFile(file)
        var bytes = try view.bytes(0, view.count)
        let container = try UniversalFile(parsing: bytes)
        guard !container.isUniversal else {
            throw MachOError(offset: 0, structure: "universal file", what: "sign each slice's thin file (llvm-lipo -thin) and join them again")
        }
        let image = try MachOImage(parsing: bytes)
        let current = try? CodeSignature.read(from: image)
        let name = identifier ?? current?.bestCodeDirectory.identifier
            ?? (image.id?.installName ?? file).split(separator: "/").last.map(String.init) ?? file
        let signature = try AdHocSignature.signature(for: image, identifier: name)
        let start = Int(image.codeSignature!.dataOffset)
        bytes.replaceSubrange(start..<start + signature.count, with: signature)
        let mode = (try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) ?? 0o755
        try UnsafeFileIO.writeAtomically(bytes, to: out ?? file, mode: UInt32(mode & 0o7777))
    }
}
