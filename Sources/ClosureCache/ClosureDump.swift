import Foundation
import LoaderCore
import LaunchPlan
import ClosureFormat
import MachOReader

/// A closure file opened for `dyld3 closure dump`: its header and its decoded closure, with
/// every check `ClosureFile.decode` makes but ownership (a dump only shows what is inside).
package struct ClosureDump: Sendable {
    package let path: String
    package let header: ClosureFileHeader
    package let closure: LaunchClosure
    package let fileSize: Int

    package init(path: String) throws(ClosureError) {
        let file = try UnsafeFileIO.openNoFollow(path).get()
        guard file.status.size <= UInt64(ClosureFile.maxFileSize) else {
            throw .corrupt(path: path, offset: 0, what: "\(file.status.size) bytes is over the \(ClosureFile.maxFileSize)-byte limit for a closure file")
        }
        guard let bytes = file.readAll() else { throw .untrusted(path: path, what: "cannot be read") }
        closure = try ClosureFile.decode(bytes, path: path)
        header = ClosureFileHeader(fieldsOf: bytes)
        fileSize = bytes.count
        self.path = path
    }

    /// The human-readable view: header, closure-wide fields, each image with up to
    /// `fixupsShown` of its rebases and of its binds decoded, then the shared tables.
    package func text(fixupsShown: Int = 8) throws(ClosureError) -> String {
        let names = exportedNames()
        var out = "\(path):\n"
        out += "header:\n"
        out += field("magic", "DYLD3CL")
        out += field("version", "\(header.version)")
        out += field("flags", "\(hex(UInt64(header.flags)))" + (header.flags & ClosureFileHeader.contentOnlyIdentityFlag != 0 ? " (content-only identity)" : ""))
        out += field("checksum", "\(hex(header.checksum)) (xxh3-64 of bytes 16..\(fileSize), verified)")
        out += field("body size", "\(header.bodySize) bytes")
        out += field("frame size", "\(header.frameSize) bytes (" + (header.flags & ClosureFileHeader.storedFlag != 0 ? "stored" : "zstd") + ")")
        out += field("file size", "\(fileSize) bytes")
        out += "closure:\n"
        out += field("builder", closure.builder)
        out += field("arch", closure.arch)
        out += field("root", closure.root.isEmpty ? "(none)" : closure.root)
        out += field("inserted", closure.binding.inserted.isEmpty ? "(none)" : closure.binding.insertedPaths.joined(separator: ", "))
        out += field("policy", closure.binding.policy.name)
        out += field("identity", closure.contentOnlyIdentity ? "content-only (size and content hash)" : "full (size, mtime, inode; content hash when stat differs)")
        out += field("images", "\(closure.images.count), \(closure.rootCount) root" + (closure.rootCount == 1 ? "" : "s"))
        out += field("fixups", "\(closure.totalRebases) rebases, \(closure.totalBinds) binds, \(closure.bindTargets.count) bind targets")
        for index in closure.images.indices {
            out += try imageText(index, fixupsShown: fixupsShown, names: names)
        }
        out += "bind targets (\(closure.bindTargets.count)):\n"
        for (index, target) in closure.bindTargets.enumerated() {
            out += "  #\(index)".padding(toLength: 8, withPad: " ", startingAt: 0) + describe(target, names: names) + "\n"
        }
        out += "initializer order:\n"
        for index in closure.initializerOrder {
            let count = closure.images[index].initializers.count
            out += "  \(imageLabel(index))" + (count == 0 ? "" : " (\(count) initializer\(count == 1 ? "" : "s"))") + "\n"
        }
        if let entry = closure.entryOffset {
            out += "entry: \(imageLabel(closure.rootCount - 1)) +\(hex(entry))\n"
        } else {
            out += "entry: none (no LC_MAIN)\n"
        }
        out += "missing weak dylibs:" + (closure.missingWeakDylibs.isEmpty ? " none\n" : "\n")
        for missing in closure.missingWeakDylibs {
            out += "  \(missing.installName) (needed by \(missing.neededBy))\n"
        }
        out += try objcText()
        out += threadLocalText()
        return out
    }

    /// The thread-local-variable step's records and the host services table.
    private func threadLocalText() -> String {
        let records = closure.threadLocals
        var out = "thread-local variables:" + (records.setups.isEmpty ? " none\n" : "\n")
        for setup in records.setups {
            out += "  \(imageLabel(setup.image)): template +\(hex(setup.templateOffset)) (\(setup.initialSize) bytes initialized, "
                + "\(setup.totalSize) in all), \(setup.descriptors.count) descriptor\(setup.descriptors.count == 1 ? "" : "s") at "
                + setup.descriptors.map { "+" + hex($0) }.joined(separator: ", ") + "\n"
        }
        out += "host services: " + (records.hostServices.map { "\(imageLabel($0.image)) +\(hex($0.vmOffset))" } ?? "none") + "\n"
        out += "dlopen closures:" + (closure.dlopens.isEmpty ? " none\n" : "\n")
        for record in closure.dlopens {
            let added = (try? record.closure(within: closure, path: "")).map { nested in
                nested.images[closure.images.count...].map { image in
                    image.cacheSlot == nil ? "\(image.path) (\(image.rebaseCount) rebases, \(image.bindCount) binds)"
                        : "\(image.path) (in the shared cache, \(image.rebaseCount + image.bindCount) patches)"
                }.joined(separator: ", ")
            } ?? "does not decode against this closure"
            out += "  \(record.requested) -> \(record.resolvedPath): \(added)\n"
        }
        return out
    }

    private func imageText(_ index: Int, fixupsShown: Int, names: [Int: [UInt64: String]]) throws(ClosureError) -> String {
        let image = closure.images[index]
        var roles: [String] = []
        if index < closure.rootCount { roles.append("root") }
        if index == closure.rootCount - 1 { roles.append("main") }
        if index >= closure.rootCount, index < closure.rootCount + closure.binding.insertedPaths.count { roles.append("inserted") }
        var out = "image \(index): \(image.path)" + (roles.isEmpty ? "" : " [\(roles.joined(separator: ", "))]") + "\n"
        out += field("install name", image.installName.isEmpty ? "(none)" : image.installName, indent: 2)
        let identity = image.identity
        var identityText = "size \(identity.size)"
        if !closure.contentOnlyIdentity {
            identityText += ", mtime \(identity.mtimeSeconds).\(String(identity.mtimeNanoseconds).leftPadded(to: 9)), inode \(identity.inode)"
        }
        identityText += ", uuid \(identity.uuid.map { $0.uuidString } ?? "(none)"), content \(hex(identity.contentHash))"
        identityText += identity.signature.map {
            ", cdhash \($0.cdHash.hex) (\($0.hashType))" + ($0.teamID.map { ", team ID \($0)" } ?? ", no team ID")
                + ($0.isPlatformBinary ? ", platform \($0.platform)" : "")
        } ?? ", unsigned"
        out += field("identity", identityText, indent: 2)
        out += field("mapping", "preferred base \(hex(image.plan.preferredBase)), vm size \(hex(image.plan.vmSize))", indent: 2)
        out += "  segments:\n"
        for segment in image.plan.segments {
            out += "    " + segment.name.padding(toLength: 16, withPad: " ", startingAt: 0)
                + " vm \(hex(segment.vmOffset))-\(hex(segment.vmOffset &+ segment.vmSize))"
                + "  file \(hex(segment.fileOffset)) size \(hex(segment.fileSize))  \(segment.protection)"
                + (segment.readOnlyAfterFixups ? " (read-only after fixups)" : "") + "\n"
        }
        out += "  dependencies:" + (image.dependencies.isEmpty ? " none\n" : "\n")
        for dependency in image.dependencies {
            let target = dependency.target >= 0 ? imageLabel(dependency.target) : "missing"
            out += "    " + dependency.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + "\(dependency.installName) -> \(target)\n"
        }
        out += field("initializers", image.initializers.isEmpty ? "none" : image.initializers.map(hex).joined(separator: ", "), indent: 2)
        out += field("rpaths", image.rpaths.isEmpty ? "none" : image.rpaths.joined(separator: ", "), indent: 2)
        // Walked as a stream: the first `fixupsShown` of each kind are kept, the rest counted.
        let shown = max(0, fixupsShown)
        let targets = closure.bindTargets
        var rebases: [ResolvedFixup] = [], binds: [ResolvedFixup] = []
        var rebaseTotal = 0, bindTotal = 0
        try closure.naming(path, image: index) { () throws(ClosureError) in
            try ClosureError.walking(.rebases) { () throws(FixupFault) in
                try FixupRunWalk(image.rebaseRuns).forEachRebase { (location, target) throws(FixupFault) in
                    rebaseTotal += 1
                    if rebases.count < shown {
                        rebases.append(ResolvedFixup(vmOffset: location, kind: .rebase(targetOffset: target.offset, high8: target.high8)))
                    }
                }
            }
            try ClosureError.walking(.binds) { () throws(FixupFault) in
                try FixupRunWalk(image.bindRuns).forEachBind(tableSize: targets.count) { (location, targetIndex, addend) throws(FixupFault) in
                    bindTotal += 1
                    if binds.count < shown { binds.append(ResolvedFixup(vmOffset: location, kind: .bind(targets[targetIndex], addend: addend))) }
                }
            }
        }
        for (title, list, total, runBytes) in [("rebases", rebases, rebaseTotal, image.rebaseRuns.count), ("binds", binds, bindTotal, image.bindRuns.count)] {
            out += field(title, "\(total) (\(runBytes) bytes of runs)", indent: 2)
            for fixup in list {
                out += "    \(hex(fixup.vmOffset))  \(describe(fixup, names: names))\n"
            }
            if total > list.count { out += "    ... \(total - list.count) more\n" }
        }
        let index = try image.fixupPageIndex.pages(path: image.path)
        out += field("fixup pages", index.pageSize == 0 ? "no index (a run crosses a page boundary: page-in links this image eagerly)"
            : "\(index.pages.count) of \(index.pageSize) bytes (\(image.fixupPageIndex.bytes.count) bytes of index)", indent: 2)
        return out
    }

    /// A fixup's effect: the value it stores, in terms of images and bind targets (named
    /// from `names`, ``exportedNames()``, where a target is an exported symbol).
    package func describe(_ fixup: ResolvedFixup, names: [Int: [UInt64: String]] = [:]) -> String {
        switch fixup.kind {
        case let .rebase(targetOffset, high8):
            "rebase -> +\(hex(targetOffset))" + (high8 == 0 ? "" : " (top byte \(hex(UInt64(high8))))")
        case let .bind(target, addend):
            "bind -> " + describe(target, names: names) + (addend == 0 ? "" : addend > 0 ? " + \(addend)" : " - \(addend.magnitude)")
        }
    }

    /// A bind target: an image and offset (with the symbol exported there, when `names`
    /// has it), an absolute value, or a missing weak import.
    package func describe(_ target: BindTarget, names: [Int: [UInt64: String]] = [:]) -> String {
        switch target {
        case let .image(index, offset): "\(imageLabel(index)) +\(hex(offset))" + (names[index]?[offset].map { " \($0)" } ?? "")
        case let .absolute(value): "absolute \(hex(value))"
        case .missingWeakImport: "missing weak import (0)"
        }
    }

    /// The symbol each bind target's image exports at the target's offset, by image and
    /// offset: the closure keeps no names (a launch needs none), so they are read from the
    /// export tries of the images on disk. An image that no longer reads, or that changed
    /// since the closure was built (its identity differs), names nothing.
    package func exportedNames() -> [Int: [UInt64: String]] {
        var wanted: [Int: Set<UInt64>] = [:]
        for case let .image(index, offset) in closure.bindTargets where closure.images.indices.contains(index) {
            wanted[index, default: []].insert(offset)
        }
        var names: [Int: [UInt64: String]] = [:]
        for (index, offsets) in wanted {
            let image = closure.images[index]
            guard let file = try? ImageFile.load(path: image.path, arch: closure.arch),
                  image.identity.uuid == nil || file.image.uuid == image.identity.uuid else { continue }
            var found: [UInt64: String] = [:]
            try? file.image.exportTrie()?.forEachSymbol { symbol in
                let offset: UInt64? = switch symbol.definition {
                case let .image(offset): offset
                case let .stubAndResolver(stub, _): stub
                case let .functionVariant(defaultOffset, _): defaultOffset
                case .reexport: nil
                }
                if let offset, offsets.contains(offset), found[offset] == nil { found[offset] = symbol.name }
            }
            names[index] = found
        }
        return names
    }

    /// `image N (leaf name)`.
    package func imageLabel(_ index: Int) -> String {
        guard closure.images.indices.contains(index) else { return "image \(index)" }
        return "image \(index) (\((closure.images[index].path as NSString).lastPathComponent))"
    }

    private func field(_ name: String, _ value: String, indent: Int = 2) -> String {
        String(repeating: " ", count: indent) + (name + ":").padding(toLength: 15, withPad: " ", startingAt: 0) + value + "\n"
    }
}
