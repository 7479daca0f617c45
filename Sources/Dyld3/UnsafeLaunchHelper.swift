#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ClosureFormat
import ClosureCache
import LaunchPlan
import LoaderCore
import LoaderSystem

/// A second thread for one launch: it takes one piece of work at a time while the launch's
/// thread does another, joined before either result is used. The fast path gives it steps
/// that read the same inputs and write nothing the other reads: the second zstd frame, half
/// of the image records, the rest of the body beside opening the images, the plan check
/// beside the mapping, part of the images' fixups (each image written by one thread).
///
/// A large closure's launch starts it as soon as the header says so, so its wake-up (tens of
/// microseconds) overlaps decoding the first frame; a small launch never does (the wake-up
/// and the TLB shootdowns from the launch's `mmap`s would cost more than the work). Between
/// pieces it polls a while before it sleeps. ``finish()`` ends the launch's use before
/// protections change, so the `mprotect`s flush no other CPU's TLB: the thread sleeps, kept
/// for the process's next launch, or exits when one is kept already. Without a running
/// helper (`nil`, not started, or no thread could be created) the work runs on the calling
/// thread after the body: the same results, one core.
package final class LaunchHelper {
    private var thread: HelperThread?

    /// The process's helper thread kept between launches, when none is in use.
    private static let kept = Mutex<HelperThread?>(nil)

    private var finished = false

    package init() {}

    deinit { finish() }

    /// Takes the kept helper thread and wakes it, or starts one (work runs inline when none can
    /// be created). Does nothing once started or finished.
    package func start() {
        guard thread == nil, !finished else { return }
        if let waiting = Self.kept.withLock({ kept in kept.take() }) {
            waiting.state.signal(HelperState.idle)
            thread = waiting
        } else {
            thread = HelperThread.start()
        }
    }

    /// Whether a thread takes the work (``start()`` was called, and it has not finished).
    package var isRunning: Bool { thread != nil }

    /// Ends this launch's use of the helper (its thread kept or ended); later work runs inline.
    package func finish() {
        finished = true
        guard let released = thread else { return }
        thread = nil
        released.state.signal(HelperState.parked)
        let surplus = Self.kept.withLock { kept -> HelperThread? in
            guard kept == nil else { return released }
            kept = released
            return nil
        }
        surplus?.stop()
    }

    /// Runs `helper` on `launchHelper`'s thread while `body` runs here, or both here (the
    /// body first) without a running helper; returns when both are done.
    package static func run<Body, Helper: Sendable, Failure: Error>(
        on launchHelper: LaunchHelper?, helper: @escaping @Sendable () -> Helper, body: () throws(Failure) -> Body
    ) throws(Failure) -> (body: Body, helper: Helper) {
        guard let thread = launchHelper?.thread else {
            let bodyResult = try body()
            return (bodyResult, helper())
        }
        let slot = ResultSlot<Helper>()
        thread.state.post { slot.value = helper() }
        let bodyResult = Result<Body, Failure>(catching: body)
        thread.state.awaitDone()
        return (try bodyResult.get(), slot.value!)
    }
}

extension LaunchHelper {
    /// Starts `work` on `launchHelper`'s thread and returns at once, the calling thread going on
    /// with the launch until ``Begun/join()``; no other work may be given to the helper
    /// meanwhile. Without a running helper, `join` runs it.
    package static func begin<Value: Sendable>(on launchHelper: LaunchHelper?, _ work: @escaping @Sendable () -> Value) -> Begun<Value> {
        guard let thread = launchHelper?.thread else { return Begun(thread: nil, slot: ResultSlot(), work: work) }
        let slot = ResultSlot<Value>()
        thread.state.post { slot.value = work() }
        return Begun(thread: thread, slot: slot, work: work)
    }

    /// Work ``begin(on:_:)`` started, joined once.
    package final class Begun<Value: Sendable> {
        private var thread: HelperThread?
        private let slot: ResultSlot<Value>
        private let work: @Sendable () -> Value

        fileprivate init(thread: HelperThread?, slot: ResultSlot<Value>, work: @escaping @Sendable () -> Value) {
            (self.thread, self.slot, self.work) = (thread, slot, work)
        }

        /// The work's result, once it is done (run here when no helper took it).
        package func join() -> Value {
            if let thread {
                thread.state.awaitDone()
                self.thread = nil
            }
            if slot.value == nil { slot.value = work() }
            return slot.value!
        }

        deinit { thread?.state.awaitDone() }
    }
}

/// A helper thread and the state it shares with whichever launch holds it.
private final class HelperThread: @unchecked Sendable {
    let state: HelperState
    private let thread: pthread_t

    /// A new thread serving a new state; nil when none can be created.
    static func start() -> HelperThread? {
        var attributes = pthread_attr_t()
        unsafe pthread_attr_init(&attributes)
        defer { unsafe pthread_attr_destroy(&attributes) }
        // The helper's work is shallow: a small stack is enough and cheap to map.
        unsafe pthread_attr_setstacksize(&attributes, 256 * 1024)
        let state = HelperState()
        var created = pthread_t()
        let context = unsafe Unmanaged.passRetained(state).toOpaque()
        guard unsafe pthread_create(&created, &attributes, { context in
            unsafe Unmanaged<HelperState>.fromOpaque(context!).takeRetainedValue().serve()
            return nil
        }, unsafe context) == 0 else {
            unsafe Unmanaged<HelperState>.fromOpaque(context).release()
            return nil
        }
        return HelperThread(state: state, thread: created)
    }

    private init(state: HelperState, thread: pthread_t) {
        self.state = state
        self.thread = thread
    }

    /// Ends the thread and waits for it.
    func stop() {
        state.signal(HelperState.stopping)
        pthread_join(thread, nil)
    }
}

/// What the launch's thread and the helper thread share: the state word and the posted work,
/// written before the state says `posted` (release) and read after the helper sees it
/// (acquire); the result slot likewise before `done`. Between pieces the helper polls for
/// ``spinBudgetNanoseconds`` (yielding the CPU), then sleeps on a condition variable that
/// posting or stopping signals; parked (between launches), it sleeps until a launch takes it.
@safe private final class HelperState: @unchecked Sendable {
    static let idle = 0, posted = 1, done = 2, stopping = 3, parked = 4
    /// How long the helper polls for work before it sleeps.
    static let spinBudgetNanoseconds = PollingWait.launchBudgetNanoseconds
    let state = Atomic<Int>(HelperState.idle)
    private var work: (@Sendable () -> Void)?
    /// Guards `sleeping`, and the helper's check of `state` before it waits.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var sleeping = false

    init() {
        unsafe pthread_mutex_init(mutex, nil)
        unsafe pthread_cond_init(wake, nil)
    }

    deinit {
        unsafe pthread_cond_destroy(wake)
        unsafe pthread_mutex_destroy(mutex)
        unsafe wake.deallocate()
        unsafe mutex.deallocate()
    }

    func post(_ work: @escaping @Sendable () -> Void) {
        self.work = work
        signal(Self.posted)
    }

    /// Stores `value` (release), then wakes the helper if it sleeps: it either saw the old
    /// value under the mutex and waits (and this signal reaches it), or sees the new one.
    func signal(_ value: Int) {
        state.store(value, ordering: .releasing)
        unsafe pthread_mutex_lock(mutex)
        if sleeping { unsafe pthread_cond_signal(wake) }
        unsafe pthread_mutex_unlock(mutex)
    }

    /// Waits until the posted work is done (``PollingWait``: it naps once it has polled its
    /// budget). A helper blocked on a disk read must not leave this thread spinning: under a
    /// real-time policy `sched_yield` lets no ordinary thread run, and the kernel worker that
    /// completes the read may be one (cold launches stalled ≈ 0.9 s before the naps).
    func awaitDone() {
        PollingWait.wait(budgetNanoseconds: Self.spinBudgetNanoseconds) { state.load(ordering: .acquiring) == Self.done }
        work = nil
        state.store(Self.idle, ordering: .relaxed)
    }

    /// The helper thread's loop: run posted work, until told to stop.
    func serve() {
        var idleSince: UInt64?
        while true {
            switch state.load(ordering: .acquiring) {
            case Self.posted:
                work?()
                state.store(Self.done, ordering: .releasing)
                idleSince = nil
            case Self.stopping:
                return
            case Self.parked:
                sleepWhile(Self.parked)
                idleSince = nil
            default:
                let now = PollingWait.monotonicNanoseconds()
                if let since = idleSince, now - since > Self.spinBudgetNanoseconds {
                    sleepWhile(Self.idle)
                    idleSince = nil
                } else {
                    if idleSince == nil { idleSince = now }
                    sched_yield()
                }
            }
        }
    }

    /// Sleeps until the state is no longer `value`.
    private func sleepWhile(_ value: Int) {
        unsafe pthread_mutex_lock(mutex)
        sleeping = true
        while state.load(ordering: .acquiring) == value {
            unsafe pthread_cond_wait(wake, mutex)
        }
        sleeping = false
        unsafe pthread_mutex_unlock(mutex)
    }
}

/// Where the helper leaves its result: written before it marks its work done, read after.
private final class ResultSlot<Value>: @unchecked Sendable {
    var value: Value?
}

/// A value handed from the helper's work to the launch: ``LaunchHelper/run`` returns only once
/// the helper is done, so the value is never shared while it is used.
package struct HelperHandoff<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
