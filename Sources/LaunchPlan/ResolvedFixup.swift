/// Where a bound symbol resolved to.
package enum BindTarget: Equatable, Hashable, Sendable {
    /// `offset` bytes from image `image`'s mach header (its preferred base).
    case image(Int, offset: UInt64)
    /// An absolute value (EXPORT_SYMBOL_FLAGS_KIND_ABSOLUTE).
    case absolute(UInt64)
    /// A weak import that was not found: it reads 0 (plus its addend).
    case missingWeakImport
}

/// One fixup with everything resolved: where it goes in its image and what to write
/// there. The slow path works these out on every launch; a closure stores them.
package struct ResolvedFixup: Equatable, Hashable, Sendable {
    package enum Kind: Equatable, Hashable, Sendable {
        /// A pointer into its own image: base + `targetOffset`, with `high8` as its top byte.
        case rebase(targetOffset: UInt64, high8: UInt8)
        /// A pointer to a symbol, plus `addend`.
        case bind(BindTarget, addend: Int64)
    }

    /// Offset of the 8-byte location from the image's preferred base.
    package let vmOffset: UInt64
    package let kind: Kind

    package init(vmOffset: UInt64, kind: Kind) {
        (self.vmOffset, self.kind) = (vmOffset, kind)
    }

    /// The 64-bit value to store, given where the images were mapped: `imageBase` for the
    /// fixup's own image, `imageBases[i]` for image `i`.
    @inlinable
    package func value(imageBase: UInt64, imageBases: [UInt64]) -> UInt64 {
        switch kind {
        case let .rebase(targetOffset, high8):
            return RebaseTarget(offset: targetOffset, high8: high8).value(imageBase: imageBase)
        case let .bind(.image(index, offset), addend):
            return imageBases[index] &+ offset &+ UInt64(bitPattern: addend)
        case let .bind(.absolute(value), addend):
            return value &+ UInt64(bitPattern: addend)
        case let .bind(.missingWeakImport, addend):
            return UInt64(bitPattern: addend)
        }
    }
}
