import ClosureFormat
import MachOReader
import LaunchPlan

/// Structure-aware mutations of a launch closure: decode it, change one thing a forger
/// would change (a count, an offset, a run, a bind target, a protection, the initializer
/// order, an image's place in the table), and encode it again with a valid checksum, so
/// the checks that meet the mutant are the body's and the fast path's, not the checksum.
public struct ClosureMutator {
    private var random: SplitMix64

    public init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// The closure file `file` with one structural mutation, or nil when `file` does not
    /// decode (the caller then mutates bytes) or the mutation found nothing to change.
    public mutating func mutate(_ file: [UInt8]) -> [UInt8]? {
        guard var closure = try? ClosureFile.decode(file, path: "fuzz"), !closure.images.isEmpty else { return nil }
        let rounds = random.below(4) == 0 ? 1 + random.below(3) : 1
        var changed = false
        for _ in 0..<rounds { changed = mutateOnce(&closure) || changed }
        return changed ? ClosureFile.encode(closure) : nil
    }

    private mutating func mutateOnce(_ closure: inout LaunchClosure) -> Bool {
        let image = random.below(closure.images.count)
        switch random.below(16) {
        case 0, 1, 2:
            let runs = random.below(2) == 0 ? \ClosureImage.rebaseRuns : \ClosureImage.bindRuns
            guard let mutated = mutateLEBToken(Array(closure.images[image][keyPath: runs])) else { return false }
            closure.images[image][keyPath: runs] = mutated[...]
        case 3:
            if random.below(2) == 0 {
                closure.images[image].rebaseCount = Int(truncatingIfNeeded: nearby(UInt64(closure.images[image].rebaseCount)) & 0xffff_ffff)
            } else {
                closure.images[image].bindCount = Int(truncatingIfNeeded: nearby(UInt64(closure.images[image].bindCount)) & 0xffff_ffff)
            }
        case 4, 5, 6:
            guard !closure.images[image].plan.segments.isEmpty else { return false }
            let index = random.below(closure.images[image].plan.segments.count)
            mutateSegment(&closure.images[image].plan.segments[index], imageSize: closure.images[image].plan.vmSize)
        case 7:
            if random.below(2) == 0 {
                closure.images[image].plan.vmSize = nearby(closure.images[image].plan.vmSize)
            } else {
                closure.images[image].plan.preferredBase = nearby(closure.images[image].plan.preferredBase)
            }
        case 8, 9:
            guard !closure.bindTargets.isEmpty else { return false }
            let index = random.below(closure.bindTargets.count)
            closure.bindTargets[index] = mutateTarget(closure.bindTargets[index], imageCount: closure.images.count)
        case 10:
            if closure.images[image].initializers.isEmpty || random.below(3) == 0 {
                closure.images[image].initializers.append(nearby(closure.images[image].plan.vmSize / 2))
            } else {
                let index = random.below(closure.images[image].initializers.count)
                closure.images[image].initializers[index] = nearby(closure.images[image].initializers[index])
            }
        case 11:
            mutateOrder(&closure.initializerOrder, imageCount: closure.images.count)
        case 12:
            closure.entryOffset = random.below(8) == 0 ? nil : nearby(closure.entryOffset ?? 0)
        case 13:
            closure.rootCount = Int(truncatingIfNeeded: nearby(UInt64(closure.rootCount)) & 0xffff)
        case 14:
            guard !closure.images[image].dependencies.isEmpty else { return false }
            let index = random.below(closure.images[image].dependencies.count)
            closure.images[image].dependencies[index].target = Int(truncatingIfNeeded: Int64(bitPattern: nearby(UInt64(bitPattern: Int64(closure.images[image].dependencies[index].target)))) & 0xffff) - random.below(2)
        default:
            mutateImageTable(&closure.images, image: image)
        }
        return true
    }

    private mutating func mutateSegment(_ segment: inout SegmentPlan, imageSize: UInt64) {
        switch random.below(6) {
        case 0: segment.vmOffset = nearby(segment.vmOffset)
        case 1: segment.vmSize = nearby(segment.vmSize)
        case 2: segment.fileOffset = nearby(segment.fileOffset)
        case 3: segment.fileSize = nearby(segment.fileSize)
        case 4: segment.protection = VMProtection(rawValue: Int32(random.below(8)))
        default: segment.readOnlyAfterFixups.toggle()
        }
    }

    private mutating func mutateTarget(_ target: BindTarget, imageCount: Int) -> BindTarget {
        switch (target, random.below(4)) {
        case (.image(let image, let offset), 0): return .image(image, offset: nearby(offset))
        case (.image(let image, let offset), 1): return .image((image + 1 + random.below(imageCount + 1)) % (imageCount + 1), offset: offset)
        case (.absolute(let value), 0): return .absolute(nearby(value))
        case (_, 2): return .missingWeakImport
        case (_, 3): return .absolute(nearby(0))
        default: return .image(random.below(imageCount + 1), offset: nearby(0))
        }
    }

    private mutating func mutateOrder(_ order: inout [Int], imageCount: Int) {
        switch random.below(4) {
        case 0 where order.count > 1:
            order.swapAt(random.below(order.count), random.below(order.count))
        case 1 where !order.isEmpty:
            order.remove(at: random.below(order.count))
        case 2 where !order.isEmpty:
            order.append(order[random.below(order.count)])
        default:
            order.append(random.below(imageCount + 2))
        }
    }

    private mutating func mutateImageTable(_ images: inout [ClosureImage], image: Int) {
        switch random.below(3) {
        case 0 where images.count > 1: images.remove(at: image)
        case 1: images.insert(images[image], at: random.below(images.count + 1))
        default: images.swapAt(image, random.below(images.count))
        }
    }

    /// One ULEB/SLEB value of a runs blob (a location delta, count, stride, target or
    /// addend: the blob is nothing but LEB128 values) replaced by a nearby or boundary value.
    private mutating func mutateLEBToken(_ blob: [UInt8]) -> [UInt8]? {
        var starts: [Int] = [0]
        for (index, byte) in blob.enumerated() where byte & 0x80 == 0 && index + 1 < blob.count { starts.append(index + 1) }
        guard !blob.isEmpty else { return random.below(2) == 0 ? nil : leb(nearby(0)) }
        let token = random.below(starts.count)
        let start = starts[token]
        var end = start
        while end < blob.count, blob[end] & 0x80 != 0 { end += 1 }
        end = min(end + 1, blob.count)
        var value: UInt64 = 0
        var shift: UInt64 = 0
        for byte in blob[start..<end] where shift < 64 {
            value |= UInt64(byte & 0x7f) << shift
            shift += 7
        }
        return Array(blob[..<start]) + leb(nearby(value)) + Array(blob[end...])
    }

    private func leb(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        LEB128.appendUnsigned(value, to: &bytes)
        return bytes
    }

    /// `value` moved a little, or a boundary value a check might get wrong.
    private mutating func nearby(_ value: UInt64) -> UInt64 {
        switch random.below(8) {
        case 0: return value &+ UInt64(1 + random.below(16))
        case 1: return value &- UInt64(1 + random.below(16))
        case 2: return value &+ 0x1000
        case 3: return value &- 0x1000
        case 4: return value ^ (1 << UInt64(random.below(64)))
        case 5: return [0, 1, 7, 8, 0x1000, 0x4000, 0xffff_ffff, 1 << 32, 1 << 40, 1 << 62, 1 << 63, .max - 7, .max][random.below(13)]
        case 6: return value &* 2
        default: return value / 2
        }
    }
}

extension SplitMix64 {
    /// A value in `0..<bound` (0 when `bound` is 0).
    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }
}
