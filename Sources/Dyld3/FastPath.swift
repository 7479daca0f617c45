import Dyld2
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

        var functions: [CodeRunner.Function] = []
        for index in closure.initializerOrder {
            let base = memory.images[index].base
            functions += closure.images[index].initializers.map { CodeRunner.Function(image: index, address: base &+ $0) }
            if !closure.images[index].initializers.isEmpty { report.initializers.append(closure.images[index].path) }
        }
        if !run {
            report.notRunReason = "--no-run"
        } else if closure.arch != CodeRunner.hostArchitecture {
            report.notRunReason = "\(closure.arch) code cannot run on this \(CodeRunner.hostArchitecture) host"
        } else {
            _ = clock.lap()
            try CodeRunner.runInitializers(functions, in: memory)
            report.timings[.initializers] = clock.lap()
            let mainIndex = closure.rootCount - 1
            if let entry = closure.entryOffset {
                report.result = try CodeRunner.runMain(
                    CodeRunner.Function(image: mainIndex, address: memory.images[mainIndex].base &+ entry), in: memory)
                report.ran = true
                report.timings[.main] = clock.lap()
            } else {
                report.notRunReason = "\(closure.images[mainIndex].path) has no LC_MAIN: loaded as a root image, no main to run"
            }
        }
        report.timings[.total] = clock.total()
        return Launch(memory: memory, report: report, fixups: nil)
    }
}
