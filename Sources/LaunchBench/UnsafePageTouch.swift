/// The page-in bench's one raw load: the first word of a page the launch mapped (the
/// caller takes each address from the closure's page index, inside its `LaunchMemory`).
enum UnsafePageTouch {
    @inline(__always)
    static func touch(_ address: UInt64) -> UInt64 {
        UnsafeRawPointer(bitPattern: UInt(address))?.load(as: UInt64.self) ?? 0
    }
}
