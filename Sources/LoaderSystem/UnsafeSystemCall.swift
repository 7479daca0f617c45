#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import LaunchPlan

/// The one place a system call's failure is read: `errno` taken as an `Errno` right after
/// the call, and an interrupted call (`EINTR`) made again here rather than at each caller.
package enum UnsafeSystemCall {
    /// Runs `call` again while it fails with `EINTR`; its result, or the `errno` it failed with.
    /// Not for `close`: on Linux the descriptor is gone even when interrupted, and closing it
    /// again could close another thread's.
    @inline(__always)
    package static func retryingInterrupts<T>(_ call: () -> T, failed: (T) -> Bool) -> Result<T, Errno> {
        while true {
            let result = call()
            guard failed(result) else { return .success(result) }
            let error = Errno(rawValue: Glibc.errno)
            if error != .interrupted { return .failure(error) }
        }
    }

    /// Runs `call` once; its result, or the `errno` it failed with. For calls that are not
    /// made again when interrupted (`close`) or cannot be (`mmap`, `mprotect`, `rename`).
    @inline(__always)
    package static func once<T>(_ call: () -> T, failed: (T) -> Bool) -> Result<T, Errno> {
        let result = call()
        return failed(result) ? .failure(Errno(rawValue: Glibc.errno)) : .success(result)
    }

    /// Runs `mmap` once (it is never interrupted); the address, or the `errno` it failed with.
    @inline(__always)
    package static func mapping(_ call: () -> UnsafeMutableRawPointer?) -> Result<UnsafeMutableRawPointer, Errno> {
        guard let address = unsafe call(), unsafe address != MAP_FAILED else { return unsafe .failure(Errno(rawValue: Glibc.errno)) }
        return unsafe .success(address)
    }

    /// The `Errno` of a call that returns `-errno` on failure (the C shims) or the error
    /// number itself (`pthread_create`, `posix_fadvise`).
    @inline(__always)
    package static func errno(returned value: Int32) -> Errno {
        Errno(rawValue: value < 0 ? -value : value)
    }
}

extension Result where Failure == Errno {
    /// The failure as a ``LoadError/systemCall(_:)`` of `call`.
    @inline(__always)
    package func failing(_ call: @autoclosure () -> String, namesCall: Bool = false) -> Result<Success, LoadError> {
        mapError { .systemCall(SystemCallFailure(call(), $0, namesCall: namesCall)) }
    }
}
