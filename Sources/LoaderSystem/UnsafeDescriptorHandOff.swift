#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Image descriptors opened and identified on one thread (images `first..<count`) and mapped
/// in order on another, each taken as it arrives. A descriptor is stored before the count
/// says so (release) and read after the taker sees it (acquire). The opener closes the
/// hand-off at its first failure: images from there on never arrive.
@safe package final class DescriptorHandOff: @unchecked Sendable {
    /// The first image handed over; those before it the taker opened itself.
    package let first: Int
    /// One past the last image handed over: the launch's image count.
    package let count: Int
    private let slots: UnsafeMutablePointer<ImageDescriptor?>
    /// Images handed over so far (from `first`).
    private let handed = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    package init(first: Int, count: Int) {
        self.first = first
        self.count = max(count, first)
        unsafe slots = .allocate(capacity: self.count - first)
        unsafe slots.initialize(repeating: nil, count: self.count - first)
    }

    deinit {
        unsafe slots.deinitialize(count: count - first)
        unsafe slots.deallocate()
    }

    /// Hands over the next image's descriptor (the opener's thread only).
    package func hand(_ descriptor: ImageDescriptor) {
        let next = handed.load(ordering: .relaxed)
        precondition(next < count - first, "more images handed over than the hand-off holds")
        unsafe (slots + next).pointee = descriptor
        handed.store(next + 1, ordering: .releasing)
    }

    /// No more images will be handed over (the opener stopped at a failure).
    package func close() {
        closed.store(true, ordering: .releasing)
    }

    /// Image `index`'s descriptor, once handed over; nil when the hand-off closed before it.
    package func take(_ index: Int) -> ImageDescriptor? {
        precondition(index >= first && index < count, "image \(index) is not in the hand-off")
        let position = index - first
        PollingWait.wait(budgetNanoseconds: PollingWait.launchBudgetNanoseconds) { handed.load(ordering: .acquiring) > position || closed.load(ordering: .acquiring) }
        guard handed.load(ordering: .acquiring) > position else { return nil }
        return unsafe (slots + position).pointee
    }
}

/// How a launch's two threads wait for each other: the pieces of work are sized to take about
/// as long, so the waiter polls (yielding the CPU), and naps once it has polled for its budget.
package enum PollingWait {
    /// The launch's budget: 0.5 ms of polling.
    package static let launchBudgetNanoseconds: UInt64 = 500_000

    /// Returns once `condition` holds: polls it for `budgetNanoseconds`, then between naps of 20 µs.
    package static func wait(budgetNanoseconds: UInt64, until condition: () -> Bool) {
        var pollingSince: UInt64?
        while !condition() {
            let now = monotonicNanoseconds()
            if let since = pollingSince, now - since > budgetNanoseconds {
                var nap = timespec(tv_sec: 0, tv_nsec: 20_000)
                unsafe nanosleep(&nap, nil)
            } else {
                if pollingSince == nil { pollingSince = now }
                sched_yield()
            }
        }
    }

    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        unsafe clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
