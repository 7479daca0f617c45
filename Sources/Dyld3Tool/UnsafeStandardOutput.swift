#if canImport(Glibc)
import Glibc
#endif

/// Standard output through a fixed 64 KiB buffer flushed with `write(2)`: text written
/// piece by piece (a table row by row) costs the buffer, however long the text.
struct StandardOutput: TextOutputStream {
    static let capacity = 64 * 1024
    private var buffer: [UInt8] = []

    init() { buffer.reserveCapacity(Self.capacity) }

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            if buffer.count + utf8.count > Self.capacity { flush() }
            if utf8.count >= Self.capacity { unsafe Self.writeAll(UnsafeRawBufferPointer(utf8)) } else { unsafe buffer.append(contentsOf: utf8) }
        }
    }

    /// Writes out what the buffer holds.
    mutating func flush() {
        guard !buffer.isEmpty else { return }
        unsafe buffer.withUnsafeBytes { unsafe Self.writeAll($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Every byte of `bytes` to file descriptor 1, across partial writes and signals. A
    /// closed pipe ends the process with SIGPIPE, as it does for llvm-objdump.
    private static func writeAll(_ bytes: UnsafeRawBufferPointer) {
        var done = 0
        while done < bytes.count {
            let count = unsafe Glibc.write(1, bytes.baseAddress! + done, bytes.count - done)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return }
            done += count
        }
    }
}
