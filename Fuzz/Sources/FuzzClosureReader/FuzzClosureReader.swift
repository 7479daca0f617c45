import FuzzDriver
import ClosureFormat

/// libFuzzer entry: the closure reader and validator (dlopen closures included). Each input is tried twice: as a whole
/// closure file (header, checksum, frame), and as a closure *body* wrapped in a valid header
/// and frame, since the checksum would otherwise reject nearly every mutation before the body
/// is parsed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClosureReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    for file in [bytes, ClosureFile.wrapBody(bytes)] {
        guard let closure = try? ClosureFile.decode(file, path: "fuzz") else { continue }
        _ = closure.consistencyProblems()
        for index in closure.images.indices { _ = try? closure.fixups(ofImage: index) }
        // Each dlopen closure, decoded against its launch closure as a dlopen would.
        for record in closure.dlopens {
            guard let nested = try? record.closure(within: closure, path: "fuzz") else { continue }
            _ = nested.consistencyProblems()
        }
    }
    return 0
}

@main
enum Fuzzer {
    static func main() {
        runFuzzer { data, size in fuzzClosureReader(data, size) }
    }
}
