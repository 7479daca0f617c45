/// The page-in bench's one raw load: the first word of a page the launch mapped (the
/// caller takes each address from the closure's page index, inside its `LaunchMemory`).
enum UnsafePageTouch {
    /// Not optimized, so the load is always made: inlined into the bench's loops, release
    /// builds made only some of them (3 of 285 pages went untouched at 100 dylibs).
    @_optimize(none) @inline(never)
    static func touch(_ address: UInt64) -> UInt64 {
        unsafe UnsafeRawPointer(bitPattern: UInt(address))?.load(as: UInt64.self) ?? 0
    }
}
