import Glibc

/// libFuzzer's driver entry point (the sanitizer runtime provides it).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// Runs libFuzzer with this process's arguments, handing each input to `callback`.
/// Started from each fuzz target's `main` (SwiftPM gives every executable its own `main`).
public func runFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Never {
    var argc = CommandLine.argc
    var argv = Optional(CommandLine.unsafeArgv)
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
}

/// The bytes libFuzzer hands over, as an array.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// libFuzzer's own byte-level mutator (for inputs a structure-aware mutator cannot decode).
@_silgen_name("LLVMFuzzerMutate")
func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>?, _ size: Int, _ maxSize: Int) -> Int

/// A `LLVMFuzzerCustomMutator` body: `mutate` gets the input and libFuzzer's seed and
/// returns the mutant, or nil to fall back to libFuzzer's byte mutations. Mutants longer
/// than `maxSize` fall back too.
public func customMutation(_ data: UnsafeMutablePointer<UInt8>?, _ size: Int, _ maxSize: Int, _ seed: UInt32,
                           _ mutate: ([UInt8], UInt64) -> [UInt8]?) -> Int {
    guard let data else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if let mutant = mutate(input, UInt64(seed)), mutant.count <= maxSize {
        mutant.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: mutant.count) }
        return mutant.count
    }
    return LLVMFuzzerMutate(data, size, maxSize)
}
