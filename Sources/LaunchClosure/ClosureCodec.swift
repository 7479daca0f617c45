import LoaderCore
import MachOReader

/// The closure body (what the zstd frame holds), field by field: see docs/closure-format.md.
enum ClosureCodec {
    static func encode(_ closure: LaunchClosure) -> [UInt8] {
        var w = ClosureWriter()
        w.string(closure.builder)
        w.string(closure.arch)
        w.string(closure.root)
        w.u8(closure.contentOnlyIdentity ? 1 : 0)
        w.uleb(closure.rootCount)
        w.uleb(closure.images.count)
        for image in closure.images {
            w.string(image.path)
            w.string(image.installName)
            let identity = image.identity
            w.uleb(identity.size)
            w.sleb(identity.mtimeSeconds)
            w.uleb(identity.mtimeNanoseconds)
            w.uleb(identity.inode)
            w.sleb(identity.ctimeSeconds)
            w.uleb(identity.ctimeNanoseconds)
            if let uuid = identity.uuid { w.u8(1); for byte in uuid { w.u8(byte) } } else { w.u8(0) }
            w.u64(identity.contentHash)
            w.uleb(image.plan.preferredBase)
            w.uleb(image.plan.vmSize)
            w.uleb(image.plan.segments.count)
            for segment in image.plan.segments {
                w.string(segment.name)
                w.uleb(segment.vmOffset)
                w.uleb(segment.vmSize)
                w.uleb(segment.fileOffset)
                w.uleb(segment.fileSize)
                w.u8(UInt8(truncatingIfNeeded: segment.protection.rawValue))
                w.u8(segment.readOnlyAfterFixups ? 1 : 0)
            }
            w.uleb(image.dependencies.count)
            for dependency in image.dependencies {
                w.string(dependency.installName)
                w.u8(linkKindCodes.firstIndex(of: dependency.kind).map(UInt8.init) ?? 0)
                w.sleb(Int64(dependency.target))
            }
            w.uleb(image.initializers.count)
            for offset in image.initializers { w.uleb(offset) }
            w.uleb(image.rpaths.count)
            for rpath in image.rpaths { w.string(rpath) }
            w.uleb(image.absentPaths.count)
            for absent in image.absentPaths { w.string(absent) }
            w.uleb(image.rebaseCount)
            w.blob(image.rebaseRuns)
            w.uleb(image.bindCount)
            w.blob(image.bindRuns)
        }
        w.uleb(closure.bindTargets.count)
        for target in closure.bindTargets {
            switch target {
            case let .image(index, offset): w.u8(0); w.uleb(index); w.uleb(offset)
            case let .absolute(value): w.u8(1); w.uleb(value)
            case .missingWeakImport: w.u8(2)
            }
        }
        w.uleb(closure.initializerOrder.count)
        for index in closure.initializerOrder { w.uleb(index) }
        if let entry = closure.entryOffset { w.u8(1); w.uleb(entry) } else { w.u8(0) }
        w.uleb(closure.missingWeakDylibs.count)
        for missing in closure.missingWeakDylibs {
            w.string(missing.installName)
            w.string(missing.neededBy)
        }
        return w.bytes
    }

    static let linkKindCodes: [DylibLinkKind] = [.regular, .weak, .reexport, .upward, .lazy]

    /// Decodes and structurally validates a body: every count bounded, every index in range,
    /// every segment inside its image, no mapping overlapping another, every bind target
    /// inside its image, every initializer and the entry point inside an executable segment.
    static func decode(_ bytes: [UInt8], path: String) throws(ClosureError) -> LaunchClosure {
        var r = ClosureReader(bytes, path: path)
        let builder = try r.string()
        let arch = try r.string()
        let root = try r.string()
        let contentOnly = try r.u8() != 0
        let rootCount = try r.int("root count")
        let imageCount = try r.count(of: "image", minimumSize: 16)
        guard rootCount >= 1, rootCount <= imageCount else { throw r.corrupt("root count \(rootCount) with \(imageCount) images") }
        var images: [ClosureImage] = []
        for _ in 0..<imageCount {
            let imagePath = try r.string()
            let installName = try r.string()
            let size = try r.uleb()
            let mtimeSeconds = try r.sleb()
            let mtimeNanoseconds = try r.uleb()
            let inode = try r.uleb()
            let ctimeSeconds = try r.sleb()
            let ctimeNanoseconds = try r.uleb()
            let uuid: [UInt8]? = try r.u8() != 0 ? try r.raw(16) : nil
            let contentHash = try r.u64()
            let preferredBase = try r.uleb()
            let vmSize = try r.uleb()
            let segmentStart = r.position
            let segmentCount = try r.count(of: "segment", minimumSize: 7)
            var segments: [SegmentPlan] = []
            for _ in 0..<segmentCount {
                let name = try r.string()
                let segment = SegmentPlan(
                    name: name, vmOffset: try r.uleb(), vmSize: try r.uleb(), fileOffset: try r.uleb(), fileSize: try r.uleb(),
                    protection: VMProtection(rawValue: Int32(try r.u8() & 7)), readOnlyAfterFixups: try r.u8() != 0)
                guard segment.vmOffset <= vmSize, segment.vmSize <= vmSize - segment.vmOffset,
                      segment.fileSize <= segment.vmSize, segment.fileOffset <= size, segment.fileSize <= size - segment.fileOffset else {
                    throw r.corrupt("segment \(name) of \(imagePath) lies outside its image or file", at: segmentStart)
                }
                if let other = segments.first(where: { $0.vmOffset < segment.vmOffset + segment.vmSize && segment.vmOffset < $0.vmOffset + $0.vmSize }) {
                    throw r.corrupt("segments \(other.name) and \(name) of \(imagePath) overlap", at: segmentStart)
                }
                segments.append(segment)
            }
            guard vmSize <= 1 << 40 else { throw r.corrupt("image \(imagePath) claims \(vmSize) bytes of address space", at: segmentStart) }
            let dependencyCount = try r.count(of: "dependency", minimumSize: 3)
            var dependencies: [(String, DylibLinkKind, Int)] = []
            for _ in 0..<dependencyCount {
                let name = try r.string()
                let code = Int(try r.u8())
                let target = try r.sleb()
                guard code < linkKindCodes.count, target >= -1, target < Int64(imageCount) else {
                    throw r.corrupt("dependency \(name) of \(imagePath) has kind \(code) and target \(target)")
                }
                dependencies.append((name, linkKindCodes[code], Int(target)))
            }
            let initializerCount = try r.count(of: "initializer")
            var initializers: [UInt64] = []
            for _ in 0..<initializerCount { initializers.append(try r.uleb()) }
            let rpathCount = try r.count(of: "rpath")
            var rpaths: [String] = []
            for _ in 0..<rpathCount { rpaths.append(try r.string()) }
            let absentCount = try r.count(of: "absent path")
            var absentPaths: [String] = []
            for _ in 0..<absentCount { absentPaths.append(try r.string()) }
            let rebaseCount = try r.int("rebase count")
            let rebaseRuns = try r.blob()
            let bindCount = try r.int("bind count")
            let bindRuns = try r.blob()
            let plan = ImagePlan(path: imagePath, preferredBase: preferredBase, vmSize: vmSize, segments: segments)
            for offset in initializers where !isExecutable(offset, plan) {
                throw r.corrupt("initializer at offset 0x\(String(offset, radix: 16)) of \(imagePath) is not in an executable segment")
            }
            images.append(ClosureImage(
                path: imagePath, installName: installName,
                identity: ImageIdentity(size: size, mtimeSeconds: mtimeSeconds, mtimeNanoseconds: mtimeNanoseconds,
                                        inode: inode, ctimeSeconds: ctimeSeconds, ctimeNanoseconds: ctimeNanoseconds,
                                        uuid: uuid, contentHash: contentHash),
                plan: plan, dependencies: dependencies, initializers: initializers, rpaths: rpaths, absentPaths: absentPaths,
                rebaseRuns: Array(bytes[rebaseRuns]), bindRuns: Array(bytes[bindRuns]),
                rebaseCount: rebaseCount, bindCount: bindCount))
        }
        let targetCount = try r.count(of: "bind target")
        var targets: [BindTarget] = []
        for _ in 0..<targetCount {
            let start = r.position
            switch try r.u8() {
            case 0:
                let index = try r.int("target image")
                let offset = try r.uleb()
                guard index < images.count, offset < images[index].plan.vmSize else {
                    throw r.corrupt("bind target (image \(index), offset 0x\(String(offset, radix: 16))) is outside its image", at: start)
                }
                targets.append(.image(index, offset: offset))
            case 1: targets.append(.absolute(try r.uleb()))
            case 2: targets.append(.missingWeakImport)
            case let tag: throw r.corrupt("unknown bind target kind \(tag)", at: start)
            }
        }
        let orderCount = try r.count(of: "initializer order entry")
        var order: [Int] = []
        for _ in 0..<orderCount {
            let index = try r.int("initializer image")
            guard index < images.count else { throw r.corrupt("initializer image \(index) is out of range") }
            order.append(index)
        }
        var entry: UInt64?
        if try r.u8() != 0 {
            let offset = try r.uleb()
            guard isExecutable(offset, images[rootCount - 1].plan) else { throw r.corrupt("entry point is not in an executable segment") }
            entry = offset
        }
        let missingCount = try r.count(of: "missing weak dylib", minimumSize: 2)
        var missing: [(String, String)] = []
        for _ in 0..<missingCount { missing.append((try r.string(), try r.string())) }
        guard r.atEnd else { throw r.corrupt("bytes after the closure body") }
        return LaunchClosure(
            builder: builder, arch: arch, root: root, contentOnlyIdentity: contentOnly, images: images, rootCount: rootCount,
            bindTargets: targets, initializerOrder: order, entryOffset: entry, missingWeakDylibs: missing)
    }

    static func isExecutable(_ offset: UInt64, _ plan: ImagePlan) -> Bool {
        plan.segments.contains { $0.protection.contains(.execute) && offset >= $0.vmOffset && offset - $0.vmOffset < $0.vmSize }
    }
}
