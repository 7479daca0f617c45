/// `DYLD_CHAINED_PTR_*`: how the pointers of one segment's fixup chains are laid out
/// (`dyld_chained_starts_in_segment.pointer_format`).
package enum ChainedPointerFormat: UInt16, Equatable, Hashable, Sendable, CaseIterable {
    // 1 to 12 in this order.
    case arm64e = 1, pointer64, pointer32, pointer32Cache, pointer32Firmware, pointer64Offset, arm64eKernel, pointer64KernelCache
    case arm64eUserland, arm64eFirmware, x86_64KernelCache, arm64eUserland24

    /// The C name, e.g. `DYLD_CHAINED_PTR_64_OFFSET`.
    package var name: String { "DYLD_CHAINED_PTR_" + Self.names[Int(rawValue) - 1] }
    private static let names = [
        "ARM64E", "64", "32", "32_CACHE", "32_FIRMWARE", "64_OFFSET", "ARM64E_KERNEL", "64_KERNEL_CACHE", "ARM64E_USERLAND",
        "ARM64E_FIRMWARE", "X86_64_KERNEL_CACHE", "ARM64E_USERLAND24",
    ]

    /// Bytes per unit of a pointer's `next` field.
    @inlinable
    package var stride: Int {
        switch self {
        case .arm64e, .arm64eUserland, .arm64eUserland24: 8
        case .arm64eKernel, .arm64eFirmware, .pointer64, .pointer64Offset, .pointer64KernelCache,
             .pointer32, .pointer32Cache, .pointer32Firmware: 4
        case .x86_64KernelCache: 1
        }
    }

    /// Bytes each fixup occupies on disk.
    @inlinable
    package var pointerSize: Int {
        switch self {
        case .pointer32, .pointer32Cache, .pointer32Firmware: 4
        default: 8
        }
    }

    /// Whether an unauthenticated rebase target is a vm address; otherwise it is an offset
    /// from the start of the image (or, for kernel caches, of the cache level).
    @inlinable
    package var rebaseTargetIsVMAddress: Bool {
        switch self {
        case .arm64e, .arm64eFirmware, .pointer64, .pointer32, .pointer32Firmware: true
        default: false
        }
    }

    /// Decodes one on-disk pointer: what it fixes up, and its `next` field (0 ends the chain).
    ///
    /// `maxValidPointer` is the segment's `max_valid_pointer`; only `DYLD_CHAINED_PTR_32`
    /// uses it, to tell non-pointer values smuggled into the chain from rebases.
    @inlinable
    package func decode(_ raw: UInt64, maxValidPointer: UInt32 = 0) -> (pointer: ChainedPointer, next: UInt32) {
        func bits(_ low: UInt64, _ count: UInt64) -> UInt64 { (raw >> low) & ((1 << count) - 1) }
        let targetKind: ChainedRebase.TargetKind = rebaseTargetIsVMAddress ? .vmAddress : .imageOffset
        // arm64e's signing fields, read only for an authenticated pointer.
        var auth: PointerAuthentication {
            let key = PointerAuthentication.Key(lowBits: UInt8(bits(49, 2)))
            return PointerAuthentication(diversity: UInt16(bits(32, 16)), addressDiversity: bits(48, 1) == 1, key: key)
        }
        switch self {
        case .arm64e, .arm64eKernel, .arm64eUserland, .arm64eFirmware, .arm64eUserland24:
            let next = UInt32(bits(51, 11))
            let isAuth = bits(63, 1) == 1, isBind = bits(62, 1) == 1
            let ordinalWidth: UInt64 = self == .arm64eUserland24 ? 24 : 16
            switch (isAuth, isBind) {
            case (false, false):
                let rebase = ChainedRebase(target: bits(0, 43), kind: targetKind, high8: UInt8(bits(43, 8)))
                return (.rebase(rebase), next)
            case (false, true):
                // A 19-bit two's-complement addend (+/-256K).
                let addend19 = bits(32, 19)
                let addend = Int64(bitPattern: addend19 & 0x4_0000 != 0 ? addend19 | ~0x7_FFFF : addend19)
                return (.bind(ChainedBind(importOrdinal: UInt32(bits(0, ordinalWidth)), addend: addend)), next)
            case (true, false):
                let rebase = ChainedRebase(target: bits(0, 32), kind: .imageOffset, high8: 0)
                return (.authRebase(rebase, auth), next)
            case (true, true): return (.authBind(ChainedBind(importOrdinal: UInt32(bits(0, ordinalWidth)), addend: 0), auth), next)
            }
        case .pointer64, .pointer64Offset:
            let next = UInt32(bits(51, 12))
            if bits(63, 1) == 1 {
                let bind = ChainedBind(importOrdinal: UInt32(bits(0, 24)), addend: Int64(bits(24, 8)))
                return (.bind(bind), next)
            }
            return (.rebase(ChainedRebase(target: bits(0, 36), kind: targetKind, high8: UInt8(bits(36, 8)))), next)
        case .pointer64KernelCache, .x86_64KernelCache:
            let next = UInt32(bits(51, 12))
            let rebase = ChainedRebase(target: bits(0, 30), kind: .imageOffset, high8: 0, cacheLevel: UInt8(bits(30, 2)))
            guard bits(63, 1) == 1 else { return (.rebase(rebase), next) }
            return (.authRebase(rebase, auth), next)
        case .pointer32:
            let next = UInt32(bits(26, 5))
            if bits(31, 1) == 1 { return (.bind(ChainedBind(importOrdinal: UInt32(bits(0, 20)), addend: Int64(bits(20, 6)))), next) }
            let target = UInt32(bits(0, 26))
            if target > maxValidPointer {
                // An out-of-range "rebase" is a plain value stored with a bias of
                // (64MB + max_valid_pointer) / 2.
                let bias = UInt32(truncatingIfNeeded: (0x0400_0000 + UInt64(maxValidPointer)) / 2)
                return (.nonPointer(target &- bias), next)
            }
            return (.rebase(ChainedRebase(target: UInt64(target), kind: .vmAddress, high8: 0)), next)
        case .pointer32Cache: return (.rebase(ChainedRebase(target: bits(0, 30), kind: .imageOffset, high8: 0)), UInt32(bits(30, 2)))
        case .pointer32Firmware: return (.rebase(ChainedRebase(target: bits(0, 26), kind: .vmAddress, high8: 0)), UInt32(bits(26, 6)))
        }
    }
}

/// What one chained pointer asks the loader to do.
package enum ChainedPointer: Equatable, Hashable, Sendable {
    /// Slide a pointer into this image.
    case rebase(ChainedRebase)
    /// Store the address of an import (plus an addend).
    case bind(ChainedBind)
    /// arm64e: slide a pointer into this image, then sign it.
    case authRebase(ChainedRebase, PointerAuthentication)
    /// arm64e: store the address of an import, then sign it.
    case authBind(ChainedBind, PointerAuthentication)
    /// `DYLD_CHAINED_PTR_32`: a plain 32-bit value kept in the chain (restored, not slid).
    case nonPointer(UInt32)

    /// The bind part, for both plain and authenticated binds.
    package var bind: ChainedBind? {
        switch self {
        case let .bind(bind), let .authBind(bind, _): bind
        default: nil
        }
    }

    /// The rebase part, for both plain and authenticated rebases.
    package var rebase: ChainedRebase? {
        switch self {
        case let .rebase(rebase), let .authRebase(rebase, _): rebase
        default: nil
        }
    }

    /// The signing parameters of an authenticated pointer.
    package var authentication: PointerAuthentication? {
        switch self {
        case let .authRebase(_, auth), let .authBind(_, auth): auth
        default: nil
        }
    }
}

/// A chained rebase: where the pointer points inside the image.
package struct ChainedRebase: Equatable, Hashable, Sendable {
    /// How `target` is expressed, which depends on the pointer format.
    package enum TargetKind: Equatable, Hashable, Sendable {
        /// An unslid vm address (`DYLD_CHAINED_PTR_64`, `DYLD_CHAINED_PTR_ARM64E`, ...).
        case vmAddress
        /// An offset from the image's preferred load address (`DYLD_CHAINED_PTR_64_OFFSET`,
        /// arm64e userland and every authenticated rebase).
        case imageOffset
    }

    package let target: UInt64, kind: TargetKind
    /// The pointer's top byte (tagged pointers), applied as is on top of the slid target.
    package let high8: UInt8
    /// Kernel-cache formats: which cache level `target` is relative to.
    package let cacheLevel: UInt8

    package init(target: UInt64, kind: TargetKind, high8: UInt8, cacheLevel: UInt8 = 0) {
        (self.target, self.kind, self.high8, self.cacheLevel) = (target, kind, high8, cacheLevel)
    }

    /// The unslid vm address of the target for an image whose preferred load address is
    /// `imageBase`, without the top byte.
    package func targetAddress(imageBase: UInt64) -> UInt64 { kind == .vmAddress ? target : imageBase &+ target }
}

/// A chained bind: which import (an index into the chained imports table) and the addend
/// stored inline in the pointer, to be added to the import's own addend.
package struct ChainedBind: Equatable, Hashable, Sendable {
    package let importOrdinal: UInt32, addend: Int64

    package init(importOrdinal: UInt32, addend: Int64) { (self.importOrdinal, self.addend) = (importOrdinal, addend) }
}

/// arm64e pointer-authentication parameters of a signed pointer.
package struct PointerAuthentication: Equatable, Hashable, Sendable {
    /// The ptrauth key.
    package enum Key: UInt8, Equatable, Hashable, Sendable {
        case ia = 0, ib = 1, da = 2, db = 3

        /// The key named by the two low bits of `lowBits`.
        @inlinable
        package init(lowBits: UInt8) { self = Self(rawValue: lowBits & 3)! }

        /// `IA`, `IB`, `DA` or `DB`.
        package var name: String { ["IA", "IB", "DA", "DB"][Int(rawValue)] }
    }

    /// The 16-bit constant discriminator.
    package let diversity: UInt16
    /// Whether the pointer's own address is blended into the discriminator.
    package let addressDiversity: Bool, key: Key

    package init(diversity: UInt16, addressDiversity: Bool, key: Key) {
        (self.diversity, self.addressDiversity, self.key) = (diversity, addressDiversity, key)
    }
}
