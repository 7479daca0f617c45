import Foundation

/// A file mapped shared and writable, to change its bytes the way a writer through such a
/// mapping does: once a page has been written (which updates the file's times), later writes
/// to it change the file's content and leave its status as it was.
@safe package final class UnsafeSharedMapping {
    private let fd: Int32
    private let address: UnsafeMutableRawPointer
    private let size: Int

    package init(path: String) throws {
        var info = stat()
        fd = unsafe open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0, unsafe fstat(fd, &info) == 0, info.st_size > 0 else { throw CocoaError(.fileReadUnknown) }
        size = Int(info.st_size)
        guard let mapped = unsafe mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), unsafe mapped != MAP_FAILED else {
            close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        unsafe address = unsafe mapped
    }

    package subscript(offset: Int) -> UInt8 {
        get { precondition(offset >= 0 && offset < size); return unsafe address.load(fromByteOffset: offset, as: UInt8.self) }
        set { precondition(offset >= 0 && offset < size); unsafe address.storeBytes(of: newValue, toByteOffset: offset, as: UInt8.self) }
    }

    deinit {
        _ = unsafe munmap(address, size)
        close(fd)
    }
}
