import Glibc
import LaunchClosure

/// libFuzzer entry: the closure reader and validator. The checksum would reject nearly every
/// mutation before the body is parsed, so the fuzzer's bytes are taken as a closure *body*
/// and wrapped in a valid header and frame first; the file path (header, checksum, frame) is
/// fuzzed as is when the input starts with the closure magic.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClosureReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let closure = try? ClosureFile.decode(bytes, path: "fuzz") {
        _ = closure.consistencyProblems()
        for index in closure.images.indices { _ = try? closure.fixups(ofImage: index) }
    }
    if let closure = try? ClosureFile.decode(ClosureFile.wrapBody(bytes), path: "fuzz") {
        _ = closure.consistencyProblems()
        for index in closure.images.indices { _ = try? closure.fixups(ofImage: index) }
    }
    return 0
}

/// libFuzzer's driver, started from `main` (SwiftPM gives every executable its own `main`).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@main
enum Fuzzer {
    static func main() {
        var argc = CommandLine.argc
        var argv = Optional(CommandLine.unsafeArgv)
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzzClosureReader(data, size) }))
    }
}
