import FuzzDriver
import MachOInspect
import MachOReader

/// libFuzzer entry: everything the reader decodes (container, load commands, every fixup
/// stream and chain, the export trie, the Objective-C metadata) through every `dyld3 inspect`
/// table, on every slice.
/// Any input must end in a result or a `MachOError`; a trap or a sanitizer report is a bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMachOReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    _ = try? ObjdumpReport.render(path: "fuzz", bytes: bytes, tables: Set(InspectTable.allCases), arch: .all)
    return 0
}

@main
enum Fuzzer {
    static func main() {
        runFuzzer { data, size in fuzzMachOReader(data, size) }
    }
}
