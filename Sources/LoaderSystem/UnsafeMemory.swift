import MachOReader
#if canImport(Glibc)
import Glibc
import LaunchPlan
#endif

/// The loader's only contact with raw memory: reserving, mapping and protecting address ranges,
/// reading and writing words in them, at addresses the caller bounds-checked against its mapping.
@usableFromInline
package enum UnsafeMemory {
    /// The host's page size.
    package static let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))

    /// Reserves `size` bytes of inaccessible address space, at `hint` if it is non-zero and
    /// free (MAP_FIXED_NOREPLACE), anywhere otherwise. Returns the address, or why `mmap` failed.
    package static func reserve(size: UInt64, at hint: UInt64) -> Result<UInt64, LoadError> {
        let flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (hint != 0 ? MAP_FIXED_NOREPLACE : 0)
        return unsafe UnsafeSystemCall.mapping {
            unsafe mmap(UnsafeMutableRawPointer(bitPattern: UInt(hint)), Int(size), PROT_NONE, flags, -1, 0)
        }
        .map { UInt64(UInt(bitPattern: $0)) }
        .failing("mmap")
    }

    /// Maps `size` bytes of `fd` at `offset` over `address` (inside a reservation), copy-on-write:
    /// read-write for fixups, or `finalProtection` for a segment nothing will write.
    package static func mapFile(fd: Int32, offset: UInt64, size: UInt64, at address: UInt64,
                       finalProtection: VMProtection? = nil) throws(LoadError) {
        let protection = (finalProtection ?? .readWrite).mmapFlags
        _ = unsafe try UnsafeSystemCall.mapping {
            unsafe mmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size), protection, MAP_PRIVATE | MAP_FIXED, fd, off_t(offset))
        }.failing("mmap").get()
    }

    /// Maps `size` bytes of `fd` at `offset` read-only, copy-on-write, at exactly `address` if
    /// that range is free (MAP_FIXED_NOREPLACE): false when it is not.
    package static func mapFileIfFree(fd: Int32, offset: UInt64, size: UInt64, at address: UInt64) -> Result<Bool, LoadError> {
        let mapped = unsafe UnsafeSystemCall.mapping {
            unsafe mmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size), PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, off_t(offset))
        }.map { UInt64(UInt(bitPattern: $0)) }
        switch mapped {
        case let .success(at):
            if at == address { return .success(true) }
            unmap(address: at, size: size)
            return .success(false)
        case .failure(.fileExists):
            return .success(false)
        case let .failure(errno):
            return .failure(.systemCall(SystemCallFailure("mmap", errno)))
        }
    }

    /// Maps `size` bytes of zeros over `address` (inside a reservation), read-write or with `protection`.
    package static func mapZeros(size: UInt64, at address: UInt64, protection: VMProtection? = nil) throws(LoadError) {
        let flags = (protection ?? .readWrite).mmapFlags
        _ = unsafe try UnsafeSystemCall.mapping {
            unsafe mmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size), flags, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0)
        }.failing("mmap").get()
    }

    /// Sets the protection of a page-aligned range.
    package static func protect(address: UInt64, size: UInt64, _ protection: VMProtection) throws(LoadError) {
        _ = try UnsafeSystemCall.once({
            unsafe mprotect(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size), protection.mmapFlags)
        }, failed: { $0 != 0 }).failing("mprotect").get()
    }

    /// Returns a range to the system.
    package static func unmap(address: UInt64, size: UInt64) {
        _ = unsafe munmap(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size))
    }

    /// Zeroes `size` bytes at `address` (the tail of a segment's last file page).
    package static func zero(address: UInt64, size: UInt64) {
        guard size > 0, let pointer = unsafe UnsafeMutableRawPointer(bitPattern: UInt(address)) else { return }
        unsafe pointer.initializeMemory(as: UInt8.self, repeating: 0, count: Int(size))
    }

    @inline(__always)
    package static func load64(_ address: UInt64) -> UInt64 {
        unsafe UnsafeRawPointer(bitPattern: UInt(address))!.loadUnaligned(as: UInt64.self)
    }

    @inlinable
    package static func store64(_ value: UInt64, at address: UInt64) {
        unsafe UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt64.self)
    }

    /// The `count` bytes at `address`, read where they lie (not copied): only for memory the
    /// process keeps mapped and readable as long as the view is used (a launch's images).
    package static func borrowedView(address: UInt64, count: Int) -> ByteView {
        guard count > 0 else { return ByteView([]) }
        return unsafe ByteView(ByteStorage(unsafeStart: UnsafeRawPointer(bitPattern: UInt(address))!, count: count, release: { _, _ in }))
    }

    /// A copy of `size` bytes at `address`.
    package static func copy(address: UInt64, size: UInt64) -> [UInt8] {
        guard size > 0 else { return [] }
        return unsafe Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: UInt(address)), count: Int(size)))
    }
}

extension UnsafeMemory {
    /// Whether the `count` mapped bytes at `address` hash to code slot `slot` of `directory`
    /// (hashed where they lie, not copied).
    package static func verifyPage(address: UInt64, count: Int, against directory: CS_CodeDirectory, slot: Int) -> Bool {
        unsafe directory.verifyPage(unsafeBytes: UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: UInt(address)), count: count), slot: slot)
    }
}

extension VMProtection {
    /// The `PROT_*` bits of `mmap` and `mprotect` for this protection.
    var mmapFlags: Int32 {
        (contains(.read) ? PROT_READ : 0) | (contains(.write) ? PROT_WRITE : 0) | (contains(.execute) ? PROT_EXEC : 0)
    }
}
