import LoaderCore
import MachOReader
import LaunchPlan

/// dyld's interposing (dyld4 `RuntimeState::buildInterposingTables` and `Loader::interpose`;
/// docs/dyld-rules.md): every dylib loaded at launch (not the main executable, a bundle or a
/// later `dlopen`) may carry `(replacement, replacee)` pointer pairs in a `__DATA*,__interpose`
/// section (or any `S_INTERPOSING` one). Each bind of every other image to a replacee goes to
/// its replacement; the interposer's own binds keep the original, so it can call through.
/// Of several interposers of one function the last in load order wins for everyone, each
/// interposer's own binds reaching the one before (a chain). Tuples with a null half are ignored.
///
/// The tuples are themselves fixups of the interposer, resolved before any bind is
/// interposed. Only binds are interposed, and only the symbol's address (the addend is added
/// afterwards), as in dyld.
package struct Interposing: Sendable {
    /// Binds to `replacee` from any image but those with a specific entry go to `replacement`.
    struct Generic: Sendable {
        let replacee: BindTarget
        var replacement: BindTarget
    }

    /// One `(replacement, replacee)` pair as the dylib declares it, both resolved.
    package struct Tuple: Equatable, Sendable {
        package let image: Int
        package let replacement: BindTarget
        package let replacee: BindTarget

        package init(image: Int, replacement: BindTarget, replacee: BindTarget) {
            (self.image, self.replacement, self.replacee) = (image, replacement, replacee)
        }
    }

    private var generic: [Generic] = []
    /// Binds to `replacee` from `image` go to `replacement` (the original, or the previous
    /// interposer's replacement).
    private var specific: [Tuple] = []
    /// Every non-null tuple, in load order then section order.
    package private(set) var tuples: [Tuple] = []

    package init() {}

    /// What a bind of image `image` to `target` (a resolved symbol, before its addend) binds to.
    @inline(__always)
    package func apply(_ target: BindTarget, for image: Int) -> BindTarget {
        guard !generic.isEmpty else { return target }
        return interposed(target, for: image)
    }

    private func interposed(_ target: BindTarget, for image: Int) -> BindTarget {
        if target == .missingWeakImport { return target }
        for entry in specific where entry.image == image && entry.replacee == target { return entry.replacement }
        for entry in generic where entry.replacee == target { return entry.replacement }
        return target
    }

    /// Adds one tuple of `image` (tuples are added in load order, then section order).
    mutating func add(image: Int, replacement: BindTarget, replacee: BindTarget) {
        guard replacement != .missingWeakImport, replacee != .missingWeakImport else { return }
        tuples.append(Tuple(image: image, replacement: replacement, replacee: replacee))
        var previous: BindTarget?
        for index in generic.indices where generic[index].replacee == replacee {
            previous = generic[index].replacement
            generic[index].replacement = replacement
        }
        if previous == nil { generic.append(Generic(replacee: replacee, replacement: replacement)) }
        specific.append(Tuple(image: image, replacement: previous ?? replacee, replacee: replacee))
    }

    /// What a tuple's pointer slot holds once fixed up, as a bind target; nil for a slot no fixup writes (null).
    static func target(of kind: ResolvedFixup.Kind?, image: Int) -> BindTarget? {
        switch kind {
        case nil: return nil
        case let .rebase(targetOffset, _): return .image(image, offset: targetOffset)
        case let .bind(target, addend):
            switch target {
            case let .image(index, offset): return .image(index, offset: offset &+ UInt64(bitPattern: addend))
            case let .absolute(value): return .absolute(value &+ UInt64(bitPattern: addend))
            case .missingWeakImport: return addend == 0 ? .missingWeakImport : .absolute(UInt64(bitPattern: addend))
            }
        }
    }
}
