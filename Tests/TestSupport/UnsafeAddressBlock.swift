#if canImport(Glibc)
import Glibc
#endif

/// One inaccessible page mapped at `address`, so a launch that asks to reserve its region
/// there fails (`MAP_FIXED_NOREPLACE`): a test of what a launch does before it maps. nil when
/// the page cannot be mapped there; ``release()`` unmaps it.
package struct AddressBlock {
    package let address: UInt64

    package init?(at address: UInt64) {
        let result = unsafe mmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), 4096, PROT_NONE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
        guard let result = unsafe result, unsafe result != MAP_FAILED, UInt64(UInt(bitPattern: result)) == address else { return nil }
        self.address = address
    }

    package func release() { _ = unsafe munmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), 4096) }
}
