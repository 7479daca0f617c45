import LaunchPlan
import MachOReader
import LoaderSystem
import LaunchMemory
import RuntimeServices

extension LaunchMemory {
    /// xxh3-64 over every writable segment, in image and segment order, with exactly the words
    /// at `slideDependent` (per image, ``LaunchDigest/slideDependentLocations(_:then:)``) made
    /// image-relative (``imageRelative(_:regionBase:)``): launches at different slides, or with some images
    /// in the shared cache, that wrote the same fixups agree, and a data word is never rewritten
    /// for its value. The words at `loaderPointers`
    /// (``LaunchDigest/loaderPointers(_:hostServices:imageCount:)``) point into the loader itself, which
    /// every process maps elsewhere: they count as the loader's pointer, 0.
    package func writableDigest(slideDependent: [[UInt64]], loaderPointers: [[UInt64]] = []) -> UInt64 {
        let relative = Self.imageRelative(images, regionBase: regionBase)
        var bytes: [UInt8] = []
        for (index, image) in images.enumerated() {
            let locations = index < slideDependent.count ? slideDependent[index] : []
            let loader = index < loaderPointers.count ? loaderPointers[index] : []
            for segment in image.plan.segments where segment.isWritable {
                var copy = UnsafeMemory.copy(address: image.base + segment.vmOffset, size: segment.vmSize)
                let end = segment.vmOffset + UInt64(copy.count)
                for location in locations where location >= segment.vmOffset && location < end && end - location >= 8 {
                    let at = Int(location - segment.vmOffset)
                    var value: UInt64 = 0
                    for byte in 0..<8 { value |= UInt64(copy[at + byte]) << (8 * UInt64(byte)) }
                    value = relative(value)
                    for byte in 0..<8 { copy[at + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
                }
                for location in loader where location >= segment.vmOffset && location < end && end - location >= 8 {
                    let at = Int(location - segment.vmOffset)
                    copy.replaceSubrange(at..<at + 8, with: repeatElement(0, count: 8))
                }
                bytes += copy
            }
        }
        return UnsafeHash.xxh3(bytes)
    }
}

extension LaunchMemory {
    /// A pointer as its image and offset among `images` (numbered in order): image `i`'s base
    /// plus `d` becomes `i << 40 | d`; a value in none of them is taken relative to `regionBase`.
    package static func imageRelative(_ images: [Image], regionBase: UInt64) -> (UInt64) -> UInt64 {
        let ranges = images.enumerated().map { (base: $1.base, size: $1.plan.vmSize, index: UInt64($0)) }.sorted { $0.base < $1.base }
        return { value in
            let after = ranges.partitionPoint { $0.base <= value }
            guard after > 0, value - ranges[after - 1].base < ranges[after - 1].size else { return value &- regionBase }
            return ranges[after - 1].index << 40 | (value - ranges[after - 1].base)
        }
    }
}

extension LaunchDigest {
    /// Per image, what a launch writes over its fixups: the Objective-C step's words, then the
    /// thread-local step's as absolute values (the digest must not take a thunk or a key
    /// written over a descriptor's fixup for a pointer into the region).
    package static func laterWrites(objc: [[ResolvedFixup]], threadLocals: [ThreadLocalSetup], imageCount: Int) -> [[ResolvedFixup]] {
        var writes = (0..<imageCount).map { index in index < objc.count ? objc[index] : [] }
        for setup in threadLocals where setup.image < imageCount {
            for descriptor in setup.descriptors {
                writes[setup.image].append(ResolvedFixup(vmOffset: descriptor, kind: .bind(.absolute(0), addend: 0)))
                writes[setup.image].append(ResolvedFixup(vmOffset: descriptor + 8, kind: .bind(.absolute(0), addend: 0)))
            }
        }
        return writes
    }

    /// Per image, the words the thread-local step sets to addresses in the loader itself, not
    /// in the images: each descriptor's thunk, and the host services table's functions (every
    /// word after its version).
    package static func loaderPointers(_ threadLocals: [ThreadLocalSetup], hostServices: HostServicesSlot?, imageCount: Int) -> [[UInt64]] {
        var pointers = [[UInt64]](repeating: [], count: imageCount)
        for setup in threadLocals where setup.image < imageCount { pointers[setup.image] += setup.descriptors }
        if let hostServices, hostServices.image < imageCount {
            pointers[hostServices.image] += stride(from: hostServices.vmOffset + 8, to: hostServices.vmOffset + HostServicesSlot.size, by: 8)
        }
        return pointers
    }

    /// Per image, the sorted locations whose final value depends on where the images were
    /// mapped: the last write there (fixups, then `later` ones) is a rebase or a bind to an image.
    package static func slideDependentLocations(_ fixups: [[ResolvedFixup]], then later: [[ResolvedFixup]] = []) -> [[UInt64]] {
        (0..<max(fixups.count, later.count)).map { index in
            var last: [UInt64: Bool] = [:]
            for list in [index < fixups.count ? fixups[index] : [], index < later.count ? later[index] : []] {
                for fixup in list {
                    switch fixup.kind {
                    case .rebase, .bind(.image, _): last[fixup.vmOffset] = true
                    case .bind(.absolute, _), .bind(.missingWeakImport, _): last[fixup.vmOffset] = false
                    }
                }
            }
            return last.filter(\.value).keys.sorted()
        }
    }
}

extension LaunchMemory {
    /// A copy of one writable segment after fixups (`vmOffset` from the image's preferred base).
    package struct SegmentSnapshot: Sendable {
        package let image: Int
        package let segment: String
        package let vmOffset: UInt64
        package let bytes: [UInt8]

        package init(image: Int, segment: String, vmOffset: UInt64, bytes: [UInt8]) {
            (self.image, self.segment, self.vmOffset, self.bytes) = (image, segment, vmOffset, bytes)
        }
    }

    /// Copies of every writable segment, in image and segment order (for `compare`).
    package func writableSnapshot() -> [SegmentSnapshot] {
        images.enumerated().flatMap { index, image in
            image.plan.segments.filter(\.isWritable).map { segment in
                SegmentSnapshot(image: index, segment: segment.name, vmOffset: segment.vmOffset,
                                bytes: UnsafeMemory.copy(address: image.base + segment.vmOffset, size: segment.vmSize))
            }
        }
    }
}

/// When a launch takes its memory's digest: before any code runs (its time excluded), or,
/// when none will, once the launch is timed: copying every writable page faults in pages and
/// evicts the caches, which would slow even untimed the steps that follow.
package enum LaunchDigest: Sendable {
    case beforeCode, afterLaunch, none
}
