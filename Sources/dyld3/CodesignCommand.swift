import ArgumentParser
import Foundation
import LoaderCore
import MachOInspect
import MachOReader

/// `dyld3 codesign`: embedded code signatures.
struct CodesignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codesign",
        abstract: "Check the embedded code signatures of Mach-O files.",
        subcommands: [CodesignVerifyCommand.self])
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

    @Argument(help: "Mach-O files: thin or universal.")
    var files: [String]

    @Option(help: "The slices to verify: an architecture name, or 'all' (the default).")
    var arch: String = "all"

    @Flag(help: "Print JSON: an array of one object per slice.")
    var json = false

    func run() throws {
        var results: [SignatureVerification] = []
        var unreadable = false
        for file in files {
            do {
                let bytes = try ImageFile.mapRegularFile(file)
                results.append(try SignatureVerification(path: file, file: bytes, arch: ArchSelection(arch)))
            } catch {
                FileHandle.standardError.write(Data("dyld3: codesign verify: \(error)\n".utf8))
                unreadable = true
            }
        }
        var out = StandardOutput()
        if json {
            out.write(JSONValue.array(results.flatMap { $0.jsonObjects() }).serialized() + "\n")
        } else {
            for result in results {
                for line in result.textLines() { out.write(line + "\n") }
            }
        }
        out.flush()
        let slices = results.flatMap(\.slices)
        if slices.contains(where: { $0.signed && !$0.valid }) { throw ExitCode(Self.invalidExitCode) }
        if unreadable { throw ExitCode(1) }
        if slices.contains(where: { !$0.signed }) { throw ExitCode(Self.unsignedExitCode) }
    }
}
