/// The mapping floor's one raw store: a word written at an address inside a region the
/// caller has mapped writable (``MappingFloor`` takes each address from the closure's
/// fixups, inside its own `LaunchMemory`).
enum UnsafeFixupStore {
    /// Stores `value` at `address` (nothing at address 0).
    @inline(__always)
    static func store(_ value: UInt64, at address: UInt64) {
        unsafe UnsafeMutableRawPointer(bitPattern: UInt(address))?.storeBytes(of: value, as: UInt64.self)
    }
}
