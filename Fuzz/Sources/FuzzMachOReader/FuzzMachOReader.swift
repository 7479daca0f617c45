import Glibc
import MachOInspect
import MachOReader

/// libFuzzer entry: everything the reader decodes (container, load commands, every fixup
/// stream and chain, the export trie) through every `dyld3 inspect` table, on every slice.
/// Any input must end in a result or a `MachOError`; a trap or a sanitizer report is a bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMachOReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? ObjdumpReport.render(path: "fuzz", bytes: bytes, tables: Set(InspectTable.allCases), arch: .all)
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
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzzMachOReader(data, size) }))
    }
}
