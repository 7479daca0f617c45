#if canImport(Glibc)
import Glibc
#endif

/// The offsets a trie walk has reached: one bit per byte of the trie, in zeroed memory
/// from `calloc`, so a large trie costs only the pages its reached nodes fall in (the
/// kernel hands out zero pages lazily), not one bit per byte up front.
@safe struct VisitedOffsets: ~Copyable {
    private let words: UnsafeMutablePointer<UInt64>, wordCount: Int

    /// A set for offsets below `count`; nil when the memory cannot be had.
    init?(count: Int) {
        wordCount = max(1, (count + 63) / 64)
        guard let memory = unsafe calloc(wordCount, MemoryLayout<UInt64>.stride) else { return nil }
        unsafe words = unsafe memory.assumingMemoryBound(to: UInt64.self)
    }

    deinit { unsafe free(words) }

    /// Adds `offset` (inside the trie); false when it was already there.
    mutating func insert(_ offset: Int) -> Bool {
        let (word, bit) = (offset / 64, UInt64(1) << UInt64(offset % 64))
        precondition(word < wordCount)
        if unsafe words[word] & bit != 0 { return false }
        unsafe words[word] |= bit
        return true
    }
}
