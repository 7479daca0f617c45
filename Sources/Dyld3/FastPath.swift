import LaunchClosure
import LoaderCore

/// The dyld3 fast path: validate a closure and apply it. No Mach-O parsing, no path
/// search, no symbol lookup: map the images as planned, write the resolved fixups, run
/// the initializers in the recorded order, then main.
public enum FastPath {
    /// Launches from the closure at `closurePath`. Throws `ClosureError` when the closure
    /// cannot be trusted (the caller may fall back), `LoadError` when the launch itself fails.
    public static func launch(closurePath: String, slide: UInt64?, run: Bool) throws -> Launch {
        var report = LaunchReport(mode: "dyld3")
        var clock = PhaseClock()
        let closure = try ClosureFile.read(closurePath)
        if let stale = closure.staleImage(closurePath: closurePath) { throw stale }
        report.timings[.closure] = clock.lap()
        return try launch(closure, slide: slide, run: run, report: &report, clock: &clock)
    }

    /// Launches an already validated closure.
    public static func launch(_ closure: LaunchClosure, slide: UInt64?, run: Bool,
                              report: inout LaunchReport, clock: inout PhaseClock) throws(LoadError) -> Launch {
        report.images = closure.images.map(\.path)
        let memory = try LaunchMemory(plans: closure.images.map(\.plan), firstSlide: slide)
        report.slide = memory.images[0].slide
        report.timings[.mapping] = clock.lap()
        let values = closure.bindTargetValues(memory)
        for index in closure.images.indices {
            try closure.applyFixups(ofImage: index, memory: memory, targetValues: values)
        }
        report.timings[.bind] = clock.lap()
        report.rebases = closure.totalRebases
        report.binds = closure.totalBinds
        report.digest = try clock.excluding { memory.writableDigest() }
        try memory.applyProtections()

        let mainImage = closure.rootCount - 1
        try LaunchSequence.runInitializersThenMain(
            order: closure.initializerOrder, initializers: closure.images.map(\.initializers), mainImage: mainImage,
            entryOffset: closure.entryOffset, paths: report.images, arch: closure.arch, run: run, memory: memory,
            report: &report, clock: &clock)
        report.timings[.total] = clock.total()
        return Launch(memory: memory, report: report, fixups: nil)
    }
}
