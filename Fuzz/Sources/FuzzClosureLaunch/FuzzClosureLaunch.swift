import ClosureFormat
import ClosureMutation
import Dyld3
import FuzzDriver
import ClosureCache
import LoaderCore

/// libFuzzer entry: a closure through the fast path, as far as a launch goes without
/// running code (bound to its own request, images opened and identified, mapped, plans
/// checked, fixups applied, protections set). Seeds are genuine closures of the fixture
/// apps, so their images exist; the structure-aware mutator (``ClosureMutator``) keeps the
/// checksum valid, so what meets each mutant is the fast path's own checks. Any input must
/// end in a launch or a thrown error; a trap, a fault or a sanitizer report is a bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClosureLaunch(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let closure = try? ClosureFile.decode(fuzzInput(data, size), path: "fuzz") else { return 0 }
    let binding = closure.binding
    let request = LaunchOptions(roots: binding.host.isEmpty ? [binding.app] : [binding.host, binding.app],
                                arch: binding.arch, root: binding.root.isEmpty ? nil : binding.root, run: false)
    if let launch = try? FastPath.launch(closure, closurePath: "fuzz", request: request) {
        launch.memory.release()
    }
    return 0
}

@_cdecl("LLVMFuzzerCustomMutator")
public func mutateClosure(_ data: UnsafeMutablePointer<UInt8>?, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    customMutation(data, size, maxSize, seed) { input, seed in
        var mutator = ClosureMutator(seed: seed)
        return mutator.mutate(input)
    }
}

@main
enum Fuzzer {
    static func main() {
        runFuzzer { data, size in fuzzClosureLaunch(data, size) }
    }
}
