#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The bench's real-time priority, kept to itself: a bench started under `chrt -f`/`-r`
/// (SCHED_FIFO or SCHED_RR) times its in-process launches at that priority, while every
/// process it starts (`tools/gen-app` and the compilers under it, `cc`, the glibc harness,
/// the fresh launches) and every thread it creates from then on starts at SCHED_OTHER.
/// Linux's `SCHED_RESET_ON_FORK` does this: set on every thread of the process, with each
/// thread's own policy and priority, a child of any of them starts with the normal policy
/// (sched(7)). A generator spinning at real-time priority could otherwise take every core
/// for as long as it runs.
package enum UnsafeSchedulingPolicy {
    /// `SCHED_RESET_ON_FORK` (linux/sched.h), or'ed into a policy.
    static let resetOnFork: Int32 = 0x4000_0000

    /// A thread's policy and its real-time priority.
    package struct Policy: Equatable, Sendable, CustomStringConvertible {
        package let policy: Int32
        package let priority: Int32
        package let resetsOnFork: Bool

        package var isRealTime: Bool { policy == SCHED_FIFO || policy == SCHED_RR }

        package var description: String {
            let name = switch policy {
            case SCHED_FIFO: "SCHED_FIFO"
            case SCHED_RR: "SCHED_RR"
            case SCHED_OTHER: "SCHED_OTHER"
            case 3: "SCHED_BATCH"
            case 5: "SCHED_IDLE"
            default: "policy \(policy)"
            }
            return isRealTime ? "\(name) \(priority)" : name
        }
    }

    /// The policy of thread `thread` (0: the calling thread), or nil when it cannot be read.
    package static func policy(ofThread thread: Int32 = 0) -> Policy? {
        let raw = sched_getscheduler(thread)
        guard raw >= 0 else { return nil }
        var parameter = sched_param()
        guard unsafe sched_getparam(thread, &parameter) == 0 else { return nil }
        return Policy(policy: raw & ~resetOnFork, priority: parameter.sched_priority, resetsOnFork: raw & resetOnFork != 0)
    }

    /// When this process runs at real-time priority, sets `SCHED_RESET_ON_FORK` on each of
    /// its threads (keeping the thread's policy and priority), so that processes and threads
    /// started from now on run at SCHED_OTHER. Returns the policy found on the calling
    /// thread when it is real-time (nil otherwise: nothing is changed), and the threads that
    /// refused the change (each keeps its policy; a child of it would inherit it).
    package static func startChildrenAtNormalPriority() -> (policy: Policy, refused: [Int32])? {
        guard let current = policy(), current.isRealTime else { return nil }
        var refused: [Int32] = []
        for thread in threads() {
            guard let policy = policy(ofThread: thread), policy.isRealTime, !policy.resetsOnFork else { continue }
            var parameter = sched_param(sched_priority: policy.priority)
            if unsafe sched_setscheduler(thread, policy.policy | resetOnFork, &parameter) != 0 { refused.append(thread) }
        }
        return (current, refused)
    }

    /// The thread IDs of this process (`/proc/self/task`).
    static func threads() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) }
    }
}
