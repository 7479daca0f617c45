import LoaderCore

extension LaunchClosure {
    /// The value each bind target stands for in this launch's memory, computed once per
    /// launch (targets were checked to lie inside their images when the closure was read).
    public func bindTargetValues(_ memory: LaunchMemory) -> [UInt64] {
        bindTargets.map { target in
            switch target {
            case let .image(index, offset): memory.images[index].base &+ offset
            case let .absolute(value): value
            case .missingWeakImport: 0
            }
        }
    }

    /// Writes image `index`'s rebases, then its binds, straight from their runs: one bounds
    /// check per run, one target check per fixup, no allocation, no strings, no lookups.
    /// A run or target the image does not allow is the closure's fault: `invalid`, naming
    /// `closurePath`.
    public func applyFixups(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        let image = images[index]
        var writer = FixupWriter(memory: memory, image: index, path: image.path, closurePath: closurePath, vmSize: image.plan.vmSize,
                                 imageBase: memory.images[index].base, targetValues: targetValues)
        try FixupRuns.walkRebases(image.rebaseRuns, path: image.path, &writer)
        try FixupRuns.walkBinds(image.bindRuns, path: image.path, &writer)
    }
}

/// The fast path's apply loop as a run visitor: checks each run once against the image's
/// writable segments (``LaunchMemory/checkRun(image:start:count:stride:)``), each rebase
/// target against the image's size and each bind target index against the table, and
/// stores words.
struct FixupWriter: RebaseRunVisitor, BindRunVisitor {
    typealias Failure = ClosureError
    let memory: LaunchMemory
    let image: Int
    let path: String
    let closurePath: String
    let vmSize: UInt64
    let imageBase: UInt64
    let targetValues: [UInt64]

    func failure(_ error: ClosureError) -> ClosureError {
        guard case let .corrupt(_, offset, what) = error else { return error }
        return invalid("fixup runs are corrupt at offset 0x\(String(offset, radix: 16)): \(what)")
    }

    func invalid(_ what: String) -> ClosureError { .invalid(path: closurePath, image: path, what: what) }

    @inline(__always)
    func beginRun(start: UInt64, count: Int, stride: UInt64) throws(ClosureError) {
        do {
            _ = try memory.checkRun(image: image, start: start, count: count, stride: stride)
        } catch {
            guard case let .mapping(_, reason) = error else { throw invalid(error.description) }
            throw invalid(reason)
        }
    }

    @inline(__always)
    func rebase(at location: UInt64, target: UInt64) throws(ClosureError) {
        let offset = target & 0x00ff_ffff_ffff_ffff
        guard offset < vmSize else { throw invalid("rebase target 0x\(String(offset, radix: 16)) is outside the image") }
        memory.storeInCheckedRun((imageBase &+ offset) | (target & 0xff00_0000_0000_0000), at: imageBase &+ location)
    }

    @inline(__always)
    func bind(at location: UInt64, targetIndex: Int, addend: Int64) throws(ClosureError) {
        guard targetIndex < targetValues.count else { throw invalid("bind target index \(targetIndex) is past the table") }
        memory.storeInCheckedRun(targetValues[targetIndex] &+ UInt64(bitPattern: addend), at: imageBase &+ location)
    }
}
