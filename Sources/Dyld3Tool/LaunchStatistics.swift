import Foundation
import LoaderCore
import MachOInspect
import MachOReader

/// `dyld3 launch --stats`: where the time before `main` went, in the spirit of dyld's
/// `DYLD_PRINT_STATISTICS`: the pre-main total, each phase with its share of it, the
/// images and fixups, and for dyld3 the closure's size and how many identities were
/// hashed. The text is meant to be pasted into a bug; `--json` carries the same fields.
struct LaunchStatistics {
    let report: LaunchReport
    /// Everything before `main`: the launch's total less `main`'s time.
    let preMainNanoseconds: Int64
    /// Each phase before `main`, in launch order, with what it does (for the text view).
    let phases: [(name: String, nanoseconds: Int64, meaning: String)]
    /// Pre-main time no phase accounts for (protections, initializer bookkeeping).
    let otherNanoseconds: Int64
    /// dyld3: the closure file and its size in bytes.
    let closurePath: String?, closureBytes: Int?
    /// A prelinked launch: whether it mapped the set's copy slid for this boot (nil for other modes).
    let slidForBoot: Bool?
    /// `main`'s own time, when it ran (not part of pre-main).
    let mainNanoseconds: Int64?

    init(_ report: LaunchReport, closurePath: String?) {
        self.report = report
        mainNanoseconds = report.ran ? report.timings[.main] : nil
        preMainNanoseconds = max(0, (report.timings[.total] ?? 0) - (mainNanoseconds ?? 0))
        phases = LaunchReport.Phase.allCases.compactMap { phase in
            guard phase != .main, phase != .total, let nanoseconds = report.timings[phase] else { return nil }
            return (phase.rawValue, nanoseconds, LaunchStatistics.meaning(phase, mode: report.mode))
        }
        otherNanoseconds = max(0, preMainNanoseconds - phases.reduce(0) { $0 + $1.nanoseconds })
        self.closurePath = closurePath
        closureBytes = closurePath.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }
        slidForBoot = Self.slidForBoot(report)
    }

    /// Whether a prelinked launch mapped the set's copy slid for this boot; nil for the
    /// other paths (the one value the JSON carries at its top and under `stats`).
    static func slidForBoot(_ report: LaunchReport) -> Bool? {
        report.mode == "prelinked" ? report.slidForBoot : nil
    }

    static func meaning(_ phase: LaunchReport.Phase, mode: String) -> String {
        let dyld3 = mode == "dyld3"
        if mode == "prelinked" {
            switch phase {
            case .closure: return "open, check and decode the set, stat every source image (on a second thread, while this one maps the copy slid for this boot)"
            case .mapping: return "map the set's range: its copy slid for this boot taken, or the set's own data mapped"
            case .rebase: return "store the slide into every pointer of the range (slid at launch)"
            default: break
            }
        }
        return switch phase {
        case .closure: "read, check and decode the closure"
        case .pathResolution: "find every dependency's file (install names, @rpath)"
        case .parsing: dyld3 ? "--verify-pages: hash every mapped page of each signed image against its code slot" : "parse every image's load commands, verify every signed image's page hashes"
        case .mapping: dyld3 ? "open and identify every image (for a large closure, three quarters of them on a second thread while the first maps them), check its plan, reserve the region, map every segment" : "reserve the region, map every segment"
        case .rebase: "walk the rebase opcodes or chains and slide pointers"
        case .bind: dyld3 ? "write every rebase and bind from the closure (a large closure's on two threads)" : "write every bind, each symbol looked up by name"
        case .objc: dyld3 ? "write the Objective-C selector rewrites and runtime tables from the closure"
            : "unique selectors, build the Objective-C class, category and hash tables, find the +load methods"
        case .initializers: "run the +load methods and the initializers"
        case .main, .total: ""
        }
    }

    /// `part` as a share of the pre-main total, in basis points (1/100 of a percent).
    func basisPoints(_ part: Int64) -> Int64 {
        preMainNanoseconds > 0 ? (part * 10_000 + preMainNanoseconds / 2) / preMainNanoseconds : 0
    }

    /// The text view: one line per figure, aligned.
    var text: String {
        func time(_ nanoseconds: Int64) -> String { String(format: "%10.3f ms", Double(nanoseconds) / 1e6) }
        func share(_ part: Int64) -> String { String(format: "%5.1f%%", Double(basisPoints(part)) / 100) }
        let (rebases, binds, images) = (report.rebases, report.binds, report.images.count)
        var out = "\(report.mode) pre-main statistics\n"
        out += "  total pre-main time:   \(time(preMainNanoseconds)) (100.0%)\n"
        for phase in phases {
            out += "    \((phase.name + ":").padding(toLength: 20, withPad: " ", startingAt: 0))\(time(phase.nanoseconds)) (\(share(phase.nanoseconds)))  \(phase.meaning)\n"
        }
        out += "    \("other:".padding(toLength: 20, withPad: " ", startingAt: 0))\(time(otherNanoseconds)) (\(share(otherNanoseconds)))  protections, initializer list\n"
        out += "  images:                \(images)\n"
        out += "  fixups:                \(rebases + binds) (\(rebases) rebases, \(binds) binds)\n"
        out += "  symbol lookups:        \(report.symbolLookups)\n"
        if let closurePath { out += "  closure:               \(closureBytes.map { "\($0) bytes" } ?? "size unknown"), \(closurePath)\n" }
        if let imagesHashed = report.imagesHashed { out += "  identities hashed:     \(imagesHashed == 0 ? "no" : "yes") (\(imagesHashed) of \(images) images)\n" }
        out += "  objective-c:           \(report.objcSkipped.map { "skipped: \($0)" } ?? "ran")\n"
        if let pagesVerified = report.pagesVerified { out += "  pages verified:        \(pagesVerified)\n" }
        if let cache = report.sharedCache { out += "  shared cache:          \(cache.images) images, mapped at \(hex(cache.base)) (this boot's)\n" }
        if let slidForBoot {
            out += "  prelinked set:         " + (slidForBoot ? "its copy slid for this boot, mapped as it lies" : "slid at launch (\(report.slideAtLaunch.map(String.init(describing:)) ?? "?"))") + "\n"
        }
        if let mainNanoseconds { out += "  main (not pre-main):   \(time(mainNanoseconds))\n" }
        for load in report.dynamicLoads {
            out += "  dlopen:                \(load.requested): " + (load.loaded.isEmpty ? "loaded already"
                : "\(load.loaded.count) images by \(["closure": "its dlopen closure", "runtime closure": "a dlopen closure built now"][load.via] ?? load.via), initializers \(load.initialized.count)") + "\n"
        }
        return out
    }

    /// The JSON view: the same fields, times in nanoseconds.
    var json: JSONValue {
        .object([
            ("pre_main_ns", .int(preMainNanoseconds)),
            ("phases", .array(phases.map { phase in
                .object([("name", .string(phase.name)), ("ns", .int(phase.nanoseconds)), ("share_basis_points", .int(basisPoints(phase.nanoseconds)))])
            })),
            ("other_ns", .int(otherNanoseconds)), ("other_share_basis_points", .int(basisPoints(otherNanoseconds))),
            ("images", .int(Int64(report.images.count))), ("fixups", .int(Int64(report.rebases + report.binds))),
            ("rebases", .int(Int64(report.rebases))), ("binds", .int(Int64(report.binds))), ("symbol_lookups", .int(Int64(report.symbolLookups))),
            ("closure", closurePath.map(JSONValue.string) ?? .null), ("closure_bytes", closureBytes.map { .int(Int64($0)) } ?? .null),
            ("identities_hashed", report.imagesHashed.map { .bool($0 > 0) } ?? .null),
            ("images_hashed", report.imagesHashed.map { .int(Int64($0)) } ?? .null),
            ("pages_verified", report.pagesVerified.map { .int(Int64($0)) } ?? .null),
            ("shared_cache_images", report.sharedCache.map { .int(Int64($0.images)) } ?? .null),
            ("shared_cache_base", report.sharedCache.map { .string(hex($0.base)) } ?? .null),
            ("slid_for_boot", slidForBoot.map(JSONValue.bool) ?? .null), ("main_ns", mainNanoseconds.map(JSONValue.int) ?? .null),
            ("objc_ran", .bool(report.objcSkipped == nil)), ("objc_skipped_reason", report.objcSkipped.map { .string("\($0)") } ?? .null),
            ("dlopens", .array(report.dynamicLoads.map { load in
                .object([("requested", .string(load.requested)), ("via", .string(load.via)),
                         ("loaded", .array(load.loaded.map(JSONValue.string))), ("initialized", .array(load.initialized.map(JSONValue.string)))])
            })),
        ])
    }
}
