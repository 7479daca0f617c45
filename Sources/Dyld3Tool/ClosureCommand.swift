import ArgumentParser
import Foundation
import ClosureCache
import MachOInspect
import LaunchPlan
import ClosureFormat
import MachOReader

/// `dyld3 closure …`: look inside closure files.
struct ClosureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "closure", abstract: "Look inside launch closure files.", subcommands: [DumpCommand.self])

    /// `dyld3 closure dump FILE`: everything a closure holds, for people or as JSON.
    struct DumpCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dump",
            abstract: "Print a closure file: header, images, segments, dependencies, fixups, initializer order.",
            discussion: """
                The file is checked as a launch checks it (header, checksum, frame, structure) \
                before anything is printed; the JSON view holds every fixup. See \
                docs/closure-format.md.
                """)

        @Argument(help: "A closure file (cache/<hash>-<arch>.dyld3closure).") var file: String
        @Option(help: "Rebases and binds shown per image in the text view.") var fixups = 8
        @Flag(help: "Print everything as JSON, every fixup included.") var json = false

        func run() throws {
            try CommandFailure.reporting(json: json) {
                let dump = try ClosureDump(path: file)
                print(try json ? ClosureJSON.object(dump).serialized() + "\n" : dump.text(fixupsShown: fixups), terminator: "")
            }
        }
    }
}

/// The JSON view of a closure file.
enum ClosureJSON {
    static func object(_ dump: ClosureDump) throws(ClosureError) -> JSONValue {
        let closure = dump.closure, header = dump.header
        let names = dump.exportedNames()
        let images = try closure.images.indices.map { index throws(ClosureError) in try image(index, closure, closurePath: dump.path) }
        return .object([
            ("schema_version", .int(JSONValue.schemaVersion)), ("path", .string(dump.path)),
            ("header", .object([
                ("magic", .string("DYLD3CL")), ("version", .uint(UInt64(header.version))), ("flags", .uint(UInt64(header.flags))),
                ("checksum", .string(hex(header.checksum))), ("body_size_bytes", .uint(header.bodySize)),
                ("frame_size_bytes", .uint(header.frameSize)), ("file_size_bytes", .int(Int64(dump.fileSize))),
            ])),
            ("builder", .string(closure.builder)), ("arch", .string(closure.arch)), ("root", .string(closure.root)),
            ("inserted", .array(closure.binding.insertedPaths.map(JSONValue.string))),
            ("thread_locals", .array(closure.threadLocals.setups.map { setup in
                .object([("image", .int(Int64(setup.image))), ("template_offset", .uint(setup.templateOffset)),
                         ("initial_size_bytes", .uint(setup.initialSize)), ("total_size_bytes", .uint(setup.totalSize)),
                         ("descriptors", .array(setup.descriptors.map(JSONValue.uint)))])
            })),
            ("host_services", closure.threadLocals.hostServices.map { .object([("image", .int(Int64($0.image))), ("vm_offset", .uint($0.vmOffset))]) } ?? .null),
            ("signature_policy", .string(closure.binding.policy.name)),
            ("identity", .string(closure.contentOnlyIdentity ? "content-only" : "full")), ("root_count", .int(Int64(closure.rootCount))),
            ("rebases", .int(Int64(closure.totalRebases))), ("binds", .int(Int64(closure.totalBinds))), ("images", .array(images)),
            ("bind_targets", .array(closure.bindTargets.map { target($0, names: names) })),
            ("initializer_order", .array(closure.initializerOrder.map { .int(Int64($0)) })),
            ("entry", closure.entryOffset.map { .object([("image", .int(Int64(closure.rootCount - 1))), ("offset", .uint($0))]) } ?? .null),
            ("missing_weak_dylibs", .array(closure.missingWeakDylibs.map {
                .object([("install_name", .string($0.installName)), ("needed_by", .string($0.neededBy))])
            })),
            ("objc", try objc(closure, closurePath: dump.path)),
        ])
    }

    static func image(_ index: Int, _ closure: LaunchClosure, closurePath: String) throws(ClosureError) -> JSONValue {
        let image = closure.images[index], identity = image.identity
        return .object([
            ("index", .int(Int64(index))), ("path", .string(image.path)),
            ("install_name", image.installName.isEmpty ? .null : .string(image.installName)),
            ("identity", .object([
                ("size_bytes", .uint(identity.size)), ("mtime_seconds", .int(identity.mtimeSeconds)),
                ("mtime_ns", .uint(identity.mtimeNanoseconds)), ("inode", .uint(identity.inode)),
                ("uuid", identity.uuid.map { .string($0.uuidString) } ?? .null),
                ("content_hash", .string(hex(identity.contentHash))),
                ("code_signature", identity.signature.map { signature in
                    .object([
                        ("cdhash", .string(signature.cdHash.hex)), ("hash_type", .string(signature.hashType.description)),
                        ("code_directory_offset", .uint(signature.codeDirectoryOffset)),
                        ("code_directory_size_bytes", .int(Int64(signature.codeDirectorySize))),
                        ("team_id", signature.teamID.map(JSONValue.string) ?? .null), ("platform", .int(Int64(signature.platform))),
                    ])
                } ?? .null),
            ])),
            ("preferred_base", .uint(image.plan.preferredBase)), ("vm_size_bytes", .uint(image.plan.vmSize)),
            ("segments", .array(image.plan.segments.map { segment in
                .object([
                    ("name", .string(segment.name)), ("vm_offset", .uint(segment.vmOffset)), ("vm_size_bytes", .uint(segment.vmSize)),
                    ("file_offset", .uint(segment.fileOffset)), ("file_size_bytes", .uint(segment.fileSize)),
                    ("protection", .string(segment.protection.description)), ("read_only_after_fixups", .bool(segment.readOnlyAfterFixups)),
                ])
            })),
            ("dependencies", .array(image.dependencies.map { dependency in
                .object([("install_name", .string(dependency.installName)), ("kind", .string(dependency.kind.rawValue)),
                         ("target", dependency.target >= 0 ? .int(Int64(dependency.target)) : .null)])
            })),
            ("initializers", .array(image.initializers.map(JSONValue.uint))), ("rpaths", .array(image.rpaths.map(JSONValue.string))),
            ("rebase_count", .int(Int64(image.rebaseCount))), ("bind_count", .int(Int64(image.bindCount))),
            ("rebase_run_bytes", .int(Int64(image.rebaseRuns.count))), ("bind_run_bytes", .int(Int64(image.bindRuns.count))),
            ("fixup_page_index", try pageIndex(image)),
            ("fixups", .array(try closure.fixups(ofImage: index, closurePath: closurePath).map { fixup($0, image: index) })),
        ])
    }

    /// The image's fixup page index: page size (0: none) and each page with its restart points.
    static func pageIndex(_ image: ClosureImage) throws(ClosureError) -> JSONValue {
        let (pageSize, pages) = try image.fixupPageIndex.pages(path: image.path)
        func restart(_ restart: FixupRestart) -> JSONValue {
            .object([("runs", .int(Int64(restart.runs))), ("offset", .int(Int64(restart.offset))),
                     ("location", .uint(restart.location)), ("target", .uint(restart.target))])
        }
        return .object([
            ("page_size_bytes", .uint(pageSize)),
            ("pages", .array(pages.map { .object([("page", .uint($0.page)), ("rebases", restart($0.rebases)), ("binds", restart($0.binds))]) })),
        ])
    }

    static func fixup(_ fixup: ResolvedFixup, image: Int) -> JSONValue {
        switch fixup.kind {
        case let .rebase(targetOffset, high8):
            .object([
                ("location", .uint(fixup.vmOffset)), ("kind", .string("rebase")),
                ("target", .object([("kind", .string("image")), ("image", .int(Int64(image))), ("offset", .uint(targetOffset))])),
                ("high8", .uint(UInt64(high8))), ("addend", .int(0)),
            ])
        case let .bind(bindTarget, addend):
            .object([("location", .uint(fixup.vmOffset)), ("kind", .string("bind")), ("target", target(bindTarget)),
                     ("addend", .int(addend))])
        }
    }

    /// A bind target; an image's with `symbol`, the name its image exports there (null when
    /// none does, or the image on disk no longer reads).
    static func target(_ target: BindTarget, names: [Int: [UInt64: String]] = [:]) -> JSONValue {
        switch target {
        case let .image(index, offset):
            .object([("kind", .string("image")), ("image", .int(Int64(index))), ("offset", .uint(offset)),
                     ("symbol", names[index]?[offset].map(JSONValue.string) ?? .null)])
        case let .absolute(value):
            .object([("kind", .string("absolute")), ("value", .uint(value))])
        case .missingWeakImport:
            .object([("kind", .string("missing-weak-import"))])
        }
    }
}
