import Foundation
import LoaderCore
import MachOInspect
import RuntimeServices

/// `dyld3 launch --stats`: where the time before `main` went, in the spirit of dyld's
/// `DYLD_PRINT_STATISTICS`: the pre-main total, each phase with its share of it, the
/// images and fixups, and for dyld3 the closure's size and how many identities were
/// hashed. The text is meant to be pasted into a bug; `--json` carries the same fields.
struct LaunchStatistics {
    /// One phase before `main`, in launch order.
    struct Phase {
        var name: String
        var nanoseconds: Int64
        /// What the phase does, for the text view.
        var meaning: String
    }

    var mode: String
    /// Everything before `main`: the launch's total less `main`'s time.
    var preMainNanoseconds: Int64
    var phases: [Phase]
    /// Pre-main time no phase accounts for (protections, initializer bookkeeping).
    var otherNanoseconds: Int64
    var images: Int
    var rebases: Int
    var binds: Int
    var symbolLookups: Int
    /// dyld3: the closure file and its size in bytes.
    var closurePath: String?
    var closureBytes: Int?
    /// dyld3: images whose content was hashed to confirm their identity.
    var imagesHashed: Int?
    /// dyld3 `--verify-pages`: pages checked against their code slots.
    var pagesVerified: Int?
    /// A prelinked launch: whether it mapped the set's copy slid for this boot, else why it slid the set.
    var slidForBoot: Bool?
    var slideAtLaunch: SlideAtLaunchReason?
    /// `main`'s own time, when it ran (not part of pre-main).
    var mainNanoseconds: Int64?
    /// Why the Objective-C step did not run (nil: it ran).
    var objcSkipped: ObjCSkipReason?
    /// What the code opened with `dlopen`.
    var dynamicLoads: [DynamicLoadEvent]

    init(_ report: LaunchReport, closurePath: String?) {
        mode = report.mode
        let main = report.ran ? report.timings[.main] : nil
        preMainNanoseconds = max(0, (report.timings[.total] ?? 0) - (main ?? 0))
        phases = LaunchReport.Phase.allCases.compactMap { phase in
            guard phase != .main, phase != .total, let nanoseconds = report.timings[phase] else { return nil }
            return Phase(name: phase.rawValue, nanoseconds: nanoseconds, meaning: LaunchStatistics.meaning(phase, mode: report.mode))
        }
        otherNanoseconds = max(0, preMainNanoseconds - phases.reduce(0) { $0 + $1.nanoseconds })
        images = report.images.count
        rebases = report.rebases
        binds = report.binds
        symbolLookups = report.symbolLookups
        self.closurePath = closurePath
        closureBytes = closurePath.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }
        imagesHashed = report.imagesHashed
        pagesVerified = report.pagesVerified
        if report.mode == "prelinked" {
            slidForBoot = report.slidForBoot
            slideAtLaunch = report.slideAtLaunch
        }
        mainNanoseconds = main
        objcSkipped = report.objcSkipped
        dynamicLoads = report.dynamicLoads
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
        var out = "\(mode) pre-main statistics\n"
        out += "  total pre-main time:   \(time(preMainNanoseconds)) (100.0%)\n"
        for phase in phases {
            out += "    \((phase.name + ":").padding(toLength: 20, withPad: " ", startingAt: 0))\(time(phase.nanoseconds)) (\(share(phase.nanoseconds)))  \(phase.meaning)\n"
        }
        out += "    \("other:".padding(toLength: 20, withPad: " ", startingAt: 0))\(time(otherNanoseconds)) (\(share(otherNanoseconds)))  protections, initializer list\n"
        out += "  images:                \(images)\n"
        out += "  fixups:                \(rebases + binds) (\(rebases) rebases, \(binds) binds)\n"
        out += "  symbol lookups:        \(symbolLookups)\n"
        if let closurePath {
            out += "  closure:               \(closureBytes.map { "\($0) bytes" } ?? "size unknown"), \(closurePath)\n"
        }
        if let imagesHashed {
            out += "  identities hashed:     \(imagesHashed == 0 ? "no" : "yes") (\(imagesHashed) of \(images) images)\n"
        }
        out += "  objective-c:           \(objcSkipped.map { "skipped: \($0)" } ?? "ran")\n"
        if let pagesVerified { out += "  pages verified:        \(pagesVerified)\n" }
        if let slidForBoot {
            out += "  prelinked set:         " + (slidForBoot ? "its copy slid for this boot, mapped as it lies" : "slid at launch (\(slideAtLaunch.map(String.init(describing:)) ?? "?"))") + "\n"
        }
        if let mainNanoseconds { out += "  main (not pre-main):   \(time(mainNanoseconds))\n" }
        for load in dynamicLoads {
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
            ("other_ns", .int(otherNanoseconds)),
            ("other_share_basis_points", .int(basisPoints(otherNanoseconds))),
            ("images", .int(Int64(images))),
            ("fixups", .int(Int64(rebases + binds))),
            ("rebases", .int(Int64(rebases))),
            ("binds", .int(Int64(binds))),
            ("symbol_lookups", .int(Int64(symbolLookups))),
            ("closure", closurePath.map(JSONValue.string) ?? .null),
            ("closure_bytes", closureBytes.map { .int(Int64($0)) } ?? .null),
            ("identities_hashed", imagesHashed.map { .bool($0 > 0) } ?? .null),
            ("images_hashed", imagesHashed.map { .int(Int64($0)) } ?? .null),
            ("pages_verified", pagesVerified.map { .int(Int64($0)) } ?? .null),
            ("slid_for_boot", slidForBoot.map(JSONValue.bool) ?? .null),
            ("main_ns", mainNanoseconds.map(JSONValue.int) ?? .null),
            ("objc_ran", .bool(objcSkipped == nil)),
            ("objc_skipped_reason", objcSkipped.map { .string("\($0)") } ?? .null),
            ("dlopens", .array(dynamicLoads.map { load in
                .object([("requested", .string(load.requested)), ("via", .string(load.via)),
                         ("loaded", .array(load.loaded.map(JSONValue.string))), ("initialized", .array(load.initialized.map(JSONValue.string)))])
            })),
        ])
    }
}
