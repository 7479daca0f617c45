import MachOReader

/// The short library names llvm-objdump prints for library ordinals (`libSystem` for
/// `/usr/lib/libSystem.B.dylib`, `Foundation` for a framework), reproduced rule for rule.
package enum LibraryShortName {
    /// The short name of an install name, or the install name itself when it matches none
    /// of the recognized forms (`Foo.framework/Foo`, `Foo.framework/Versions/A/Foo`,
    /// `libFoo.A.dylib`, `libFoo.dylib`, `Foo.qtx`).
    package static func of(_ installName: String) -> String {
        let guess = guess(Array(installName.utf8))
        return guess.isEmpty ? installName : String(decoding: guess, as: UTF8.self)
    }

    /// The name printed for a library ordinal of `image`, special ordinals included.
    package static func forOrdinal(_ ordinal: Int, in image: MachOImage) -> String {
        switch ordinal {
        case 0: return "this-image"
        case -1: return "main-executable"
        case -2: return "flat-namespace"
        case -3: return "weak"
        case ..<(-3): return "<<unknown special ordinal>>"
        default:
            guard ordinal > 0, ordinal <= image.dependencies.count else { return "<<bad library ordinal>>" }
            return of(image.dependencies[ordinal - 1].installName)
        }
    }

    // StringRef-style helpers over bytes: slices clamp, rfind searches strictly before `from`.
    private static func slice(_ s: [UInt8], _ start: Int, _ end: Int) -> ArraySlice<UInt8> {
        let lo = min(start, s.count)
        let hi = max(lo, min(end, s.count))
        return s[lo..<hi]
    }

    private static func rfind(_ s: [UInt8], _ c: UInt8, before from: Int = Int.max) -> Int? {
        s[..<min(from, s.count)].lastIndex(of: c)
    }

    private static let dotFramework = Array(".framework/".utf8)
    private static let slash = UInt8(ascii: "/"), dot = UInt8(ascii: "."), underbar = UInt8(ascii: "_")

    /// Only these image suffixes are split off (`libFoo_debug.dylib`).
    private static func isKnownSuffix(_ suffix: ArraySlice<UInt8>) -> Bool {
        suffix.elementsEqual("_debug".utf8) || suffix.elementsEqual("_profile".utf8)
    }

    private static func guess(_ name: [UInt8]) -> ArraySlice<UInt8> {
        if let a = rfind(name, slash), a != 0 {
            var foo = Array(slice(name, a + 1, name.count))
            if let idx = rfind(foo, underbar), foo.count >= 2, isKnownSuffix(slice(foo, idx, foo.count)) { foo = Array(slice(foo, 0, idx)) }
            /// Whether `foo.framework/` follows the slash at `separator` (nil: the name's start).
            func frameworkAfter(_ separator: Int?) -> Bool {
                let idx = separator.map { $0 + 1 } ?? 0
                return Array(slice(name, idx, idx + foo.count)) == foo
                    && Array(slice(name, idx + foo.count, idx + foo.count + dotFramework.count)) == dotFramework
            }
            // Foo.framework/Foo
            let b = rfind(name, slash, before: a)
            if frameworkAfter(b) { return foo[...] }
            // Foo.framework/Versions/A/Foo
            if let b, let c = rfind(name, slash, before: b), c != 0,
               slice(name, c + 1, name.count).starts(with: Array("Versions/".utf8)), frameworkAfter(rfind(name, slash, before: c)) {
                return foo[...]
            }
        }
        // libFoo.A.dylib, libFoo.dylib, Foo.qtx
        guard var a = rfind(name, dot), a != 0 else { return [] }
        let ext = Array(slice(name, a, name.count))
        var lib: ArraySlice<UInt8>
        if ext == Array(".dylib".utf8) {
            if a >= 3, Array(slice(name, a - 2, a - 1)) == [dot] { a -= 2 }
            let b = rfind(name, slash, before: a).map { $0 + 1 } ?? 0
            lib = slice(name, b, a)
            if let idx = rfind(name, underbar), idx != b, isKnownSuffix(slice(name, idx, a)) { lib = slice(name, b, idx) }
        } else if ext == Array(".qtx".utf8) {
            lib = slice(name, rfind(name, slash, before: a).map { $0 + 1 } ?? 0, a)
        } else { return [] }
        if lib.count >= 3, lib[lib.endIndex - 2] == dot { lib = lib.dropLast(2) }
        return lib
    }
}

/// ``LibraryShortName/forOrdinal(_:in:)`` for every ordinal of one image, worked out once:
/// the special ordinals and each dependency's name are computed up front, so a table row
/// costs an array read.
struct LibraryShortNames {
    /// `names[ordinal + 3]` for the ordinals -3 through the dependency count.
    private let names: [String], image: MachOImage

    init(_ image: MachOImage) {
        self.image = image
        names = (-3...image.dependencies.count).map { LibraryShortName.forOrdinal($0, in: image) }
    }

    subscript(ordinal: Int) -> String {
        ordinal >= -3 && ordinal + 3 < names.count ? names[ordinal + 3] : LibraryShortName.forOrdinal(ordinal, in: image)
    }
}
