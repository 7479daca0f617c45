import Foundation

/// The bench's Markdown: tables per measurement and the product's performance targets, measured.
/// Every table fits ``maxTableWidth`` columns (a wide one is split, see ``table(_:_:keys:)``).
package enum MarkdownReport {
    package static func render(_ report: BenchReport) -> String {
        let paths = LaunchPath.allCases.map(\.rawValue)
        let labels = LaunchPath.allCases.map(\.label)
        var out = """
            # dyld3 bench

            \(report.machine.cores) cores, \(report.machine.kernel), \(report.machine.date). \
            Apps: `tools/gen-app --seed \(report.seed)` (\(report.arch) \(report.style)) and their ELF twins. \
            \(report.runs) samples per path and size, median (p90). Every path stops before running code. \
            glibc runs on the twin in two layouts: per-framework dirs (a directory per framework, each object's DT_RUNPATH \
            naming its dependencies' directories, as `@rpath` maps onto ELF) and one dir (every object in one directory, \
            DT_RUNPATH `$ORIGIN`, as ELF projects ship); every ratio to glibc is against the faster of the two (best glibc).\n\n
            """
        if let shape = report.objc {
            out += """
                Objective-C apps: `tools/gen-app --objc-classes \(shape.classes) --objc-categories \(shape.categories) \
                --objc-selrefs \(shape.selectorReferences)`. The ELF twins are the C-only apps of the same sizes: \
                glibc does no Objective-C work.

                ## The Objective-C step (warm medians)

                Writes: the closure's ObjC record (selector references and method-list names rewritten to one address per name, \
                the runtime's class, category and hash tables). dyld2 works them out after bind on every launch; dyld3 copies them \
                from the closure. Share = the step's median / the launch's median total.\n\n
                """
            out += table(["dylibs", "ObjC writes", "dyld2 objc", "dyld2 total", "dyld2 share"], report.sizes.map { size in
                guard let share = size.objc else { return ["\(size.dylibs)"] + Array(repeating: "–", count: 4) }
                return ["\(size.dylibs)", "\(share.writes)", time(share.dyld2), time(share.dyld2Total), String(format: "%.1f%%", share.dyld2Fraction * 100)]
            })
            out += "\n" + table(["dylibs", "dyld3 objc", "dyld3 total", "dyld3 share", "dyld2 objc / dyld3 objc"], report.sizes.map { size in
                guard let share = size.objc else { return ["\(size.dylibs)"] + Array(repeating: "–", count: 4) }
                return ["\(size.dylibs)", time(share.dyld3), time(share.dyld3Total), String(format: "%.1f%%", share.dyld3Fraction * 100),
                        share.dyld3 > 0 ? String(format: "%.1f×", Double(share.dyld2) / Double(share.dyld3)) : "–"]
            })
            out += "\n"
        }

        out += """
            ## Launch time, one process (warm), interleaved

            floor: reserve, map every segment of every image and write once to each page holding a fixup; \
            floor + protections: the same, then each segment's final protection (`__DATA_CONST` read-only after fixups, \
            as dyld and both launch paths leave it), the same final memory as dyld3's.

            Times: median (p90).\n\n
            """
        out += table(["dylibs", "images", "fixups"] + labels, report.sizes.map { size in
            ["\(size.dylibs)", "\(size.images)", "\(size.fixups)"] + paths.map { cell(size.warm[$0]) }
        })
        out += "\nRatios of the medians:\n\n"
        out += table(["dylibs", "best glibc", "dyld3 / floor", "dyld3 / (floor + protections)", "dyld3 / best glibc", "dyld2 / dyld3", "dyld2 / best glibc"],
                     report.sizes.map { size in
                         ["\(size.dylibs)", LaunchPath.fasterGlibc(size.warm)?.path.label ?? "–",
                          ratio(size.warm, "dyld3", "floor"), ratio(size.warm, "dyld3", "floor-protected"), glibcRatio(size.warm, "dyld3"),
                          ratio(size.warm, "dyld2", "dyld3"), glibcRatio(size.warm, "dyld2")]
                     })

        if let eviction = report.coldEviction {
            out += "\n## Cold launches (page cache emptied before each sample)\n\n"
            out += "Eviction: \(eviction.explanation). Each sample: evict, then launch; the paths interleave round-robin. "
            out += "Resident after eviction: pages of the path's files still in the page cache just after an eviction (mincore), of all their pages.\n\n"
            let rows = report.sizes.flatMap { size in
                LaunchPath.allCases.map { path in
                    let (warm, cold) = (size.warm[path.rawValue], size.cold?[path.rawValue])
                    let resident = size.residentAfterEviction?[path.rawValue].map { "\($0.resident) / \($0.total)" } ?? "–"
                    return ["\(size.dylibs)", path.label, cell(warm), cell(cold),
                            warm.flatMap { w in cold.map { String(format: "%.1f×", Double($0.median) / Double(max(w.median, 1))) } } ?? "–", resident]
                }
            }
            out += table(["dylibs", "path", "warm", "cold", "cold / warm", "resident after eviction"], rows, keys: 2)
            out += "\n" + table(["dylibs", "dyld3 cold / dyld2 cold", "dyld3 cold / best glibc cold", "best glibc cold"], report.sizes.map { size in
                let cold = size.cold ?? [:]
                return ["\(size.dylibs)", ratio(cold, "dyld3", "dyld2"), glibcRatio(cold, "dyld3"), LaunchPath.fasterGlibc(cold)?.path.label ?? "–"]
            })
            out += "\n### dyld3 phases, cold (medians)\n\n"
            out += phaseTable(["closure", "mapping", "bind"], report.sizes.map { (dylibsTitle($0), $0.coldDyld3Phases) })
        }

        let freshPaths = ["dyld2", "dyld3"] + LaunchPath.glibcPaths.map(\.rawValue)
        if report.sizes.contains(where: { !$0.fresh.isEmpty }) {
            out += "\n## Launch time, a fresh process per launch\n\n"
            out += "In-process time of the load (dyld2/dyld3: `timings.total` of `dyld3 launch --no-run --json`; glibc: the harness's dlopen), and each process's peak RSS.\n\n"
            out += table(["dylibs"] + freshPaths.map(label) + ["dyld2 / dyld3"], report.sizes.map { size in
                ["\(size.dylibs)"] + freshPaths.map { cell(size.fresh[$0]) } + [ratio(size.fresh, "dyld2", "dyld3")]
            })
            out += "\nPeak RSS of each process (median):\n\n"
            out += table(["dylibs"] + freshPaths.map(label), report.sizes.map { size in
                ["\(size.dylibs)"] + freshPaths.map { size.freshMaxRssKilobytes[$0].map { megabytes($0.median) } ?? "–" }
            })
        }

        out += "\n## Per fixup, pages, memory\n\n"
        out += "ns per fixup: warm median / Mach-O fixups (glibc: / ELF relocations). Pages dirtied: Private_Dirty pages of the images' mappings after one launch (/proc/self/smaps).\n\n"
        out += "ns per fixup:\n\n"
        out += table(["dylibs", "Mach-O fixups", "ELF relocations"] + labels, report.sizes.map { size in
            ["\(size.dylibs)", "\(size.fixups)", "\(size.elfRelocations)"] + paths.map { String(format: "%.1f", size.nanosecondsPerFixup[$0] ?? 0) }
        })
        out += "\nPages dirtied, and the bench process's peak RSS:\n\n"
        out += table(["dylibs", "fixup pages"] + labels + ["bench peak RSS"], report.sizes.map { size in
            ["\(size.dylibs)", "\(size.fixupPages)"] + paths.map { "\(size.pagesDirtied[$0] ?? 0)" } + [megabytes(Int64(size.benchMaxRssKilobytes))]
        })

        out += "\n## The closure\n\n"
        out += "Build = `ClosureBuilder.build` + `ClosureFile.write`. Image metadata = LC_DYLD_INFO rebase+bind+weak+lazy+export sizes, or LC_DYLD_CHAINED_FIXUPS + LC_DYLD_EXPORTS_TRIE sizes, summed over images.\n\n"
        out += table(["dylibs", "closure bytes", "bytes / fixup", "image metadata bytes", "closure / metadata"], report.sizes.map { size in
            ["\(size.dylibs)", "\(size.closure.fileBytes)", String(format: "%.2f", size.closure.bytesPerFixup), "\(size.closure.imageMetadataBytes)",
             String(format: "%.0f%%", size.closure.relativeToMetadata * 100)]
        })
        out += "\nBuild: median (p90).\n\n" + table(["dylibs", "build"], report.sizes.map { ["\($0.dylibs)", cell($0.closure.build)] })

        let objcPhase = report.objc == nil ? [] : ["objc"]
        out += "\n## dyld3 phases (warm medians)\n\n"
        out += "closure = read, checksum, decompress, decode and check the closure; mapping = open and identify every image, check its plan against its load commands, reserve + mmap every segment (the floor also opens every image; from a 64 KiB closure body, a second thread reads the bind targets and the rest of the body while the first quarter of the images is opened, then opens the others while the first thread maps them and checks the plans, and any wait for it counts here); bind = write every rebase and bind (from a 64 KiB body, the second thread writes part of the images' while the first writes the rest); \(otherMeaning)\n\n"
        out += phaseTable(["closure", "mapping", "bind"] + objcPhase, report.sizes.map { (dylibsTitle($0), $0.dyld3Phases) })
        out += "\n## dyld2 phases (warm medians)\n\n"
        out += "\(otherMeaning)\n\n"
        out += phaseTable(["path_resolution", "parsing", "mapping", "rebase", "bind"] + objcPhase,
                          report.sizes.map { (dylibsTitle($0), $0.dyld2Phases) })

        // Each size that measured page-in: its dylibs, its result, its floor.
        let paged = report.sizes.compactMap { size in size.pageIn.map { (size.dylibs, $0, size.warm[LaunchPath.floor.rawValue]) } }
        if !paged.isEmpty {
            out += "\n## Page-in linking (docs/page-in.md): launch to main, then touching the fixup pages\n\n"
            out += "Launches, then touching 10%, 50% and 100% of the fixup pages: median (p90).\n\n"
            let levels = PageInResult.touchLevels
            let after = levels.map { "after \($0)%" }
            out += table(["dylibs", "fixup pages", "eager dyld3", "floor", "page-in"] + levels.map { "+\($0)%" }, paged.map { dylibs, result, floor in
                return ["\(dylibs)", "\(result.fixupPages)", cell(result.eagerLaunch), cell(floor), cell(result.launch)]
                    + levels.map { cell(result.touch["\($0)"]) }
            })
            out += "\nRatios of the medians, and how the launch wrote its fixups:\n\n"
            out += table(["dylibs", "page-in / eager", "(launch + 100%) / eager", "mode"], paged.map { dylibs, result, _ in
                let eager = result.eagerLaunch.median, launch = result.launch.median
                let full = launch + (result.touch["100"]?.median ?? 0)
                return ["\(dylibs)", ratio(launch, eager), ratio(full, eager), result.fallbackReason.map { "eager: \($0)" } ?? "page-in"]
            })
            out += "\nPrivate pages of the launch's region (smaps' Anonymous: the copies fixups made; "
                + "pages installed by UFFDIO_COPY are anonymous but never dirty, so Private_Dirty reads 0 for page-in):\n\n"
            out += table(["dylibs", "eager dyld3", "page-in at launch"] + after + ["launch / eager"], paged.map { dylibs, result, _ in
                let dirty = result.privatePages
                let ratio = (dirty["eager"] ?? 0) > 0 ? String(format: "%.1f%%", 100 * Double(dirty["launch"] ?? 0) / Double(dirty["eager"]!)) : "–"
                let filled = result.pagesFilled
                return ["\(dylibs)"] + ["eager", "launch", "10", "50", "100"].map { level in
                    "\(dirty[level] ?? 0)" + (filled[level].map { " (\($0) filled)" } ?? "")
                } + [ratio]
            })
            out += "\nFaults: first touches the pager resolved, each filling its page and, with fault-around, up to "
                + "`--fault-around` pages of the same image; the cost of touching 100% of the fixup pages per fault and per page filled:\n\n"
            out += table(["dylibs", "fault-around", "faults at launch"] + after + ["per fault", "per page"], paged.map { dylibs, result, _ in
                let cost = result.costPerFault
                return ["\(dylibs)", "\(result.faultAround)"] + ["launch", "10", "50", "100"].map { "\(result.faults[$0] ?? 0)" }
                    + [cost.map { String(format: "%.1f µs", $0.fault / 1000) } ?? "–", cost.map { String(format: "%.1f µs", $0.page / 1000) } ?? "–"]
            })
        }

        let signed = report.sizes.compactMap { size in size.codeSigning.map { (size.dylibs, $0) } }
        if !signed.isEmpty {
            out += "\n## Code-signature verification (docs/code-signing.md): each check on its own, medians (p90)\n\n"
            out += table(["dylibs", "signed images", "pages", "MB", "dyld2: every page hashed", "per page", "per MB",
                          "dyld3: cdHash identity", "of the dyld3 launch", "page-in: one page's hash", "per MB"], signed.map { dylibs, cost in
                return ["\(dylibs)", "\(cost.signedImages)", "\(cost.signedPages)", String(format: "%.1f", Double(cost.signedBytes) / 1_048_576),
                        cell(cost.fullVerification), microseconds(cost.fullVerificationNsPerPage), milliseconds(cost.fullVerificationNsPerMb),
                        cell(cost.cdhashCheck), String(format: "%.1f%%", cost.cdhashShareOfDyld3 * 100),
                        microseconds(cost.pageCheckNsPerPage), milliseconds(cost.pageCheckNsPerMb)]
            })
            out += "\nWhat the cdHash identity check costs the eager dyld3 launch: launches with it and with it switched off (bench only), interleaved:\n\n"
            out += table(["dylibs", "dyld3", "without the cdHash check", "cost", "share (target ≤ 5%)"], signed.map { dylibs, cost in
                return ["\(dylibs)", cell(cost.dyld3Eager), cell(cost.dyld3WithoutCdhash), time(cost.cdhashLaunchCostNs),
                        String(format: "%.1f%%", cost.cdhashLaunchShare * 100)]
            })
            out += "\nEager dyld3 without and with `--verify-pages` (interleaved; no code run), and the verification's own phase:\n\n"
            out += table(["dylibs", "eager", "--verify-pages", "pages checked", "verification", "per page", "per MB"], signed.map { dylibs, cost in
                return ["\(dylibs)", cell(cost.dyld3Eager), cell(cost.dyld3VerifyPages), "\(cost.verifyPagesChecked)", cell(cost.verifyPagesPhase),
                        microseconds(cost.verifyPagesNsPerPage), milliseconds(cost.verifyPagesNsPerMb)]
            })
        }

        out += """

            ## Performance targets

            The goals dyld3 is built to, checked against this run: at 400 dylibs, a warm dyld3 launch close to the mapping floor \
            (mapping every segment and writing each fixup page once, the least any loader does), at most half of glibc's best \
            and at least 3× faster than dyld2; time per fixup flat as apps grow; closures small beside the metadata they replace.\n\n
            """
        if !report.sizes.contains(where: { $0.dylibs == 400 }) {
            out += "This run has no 400-dylib app, so the launch-time goals are not checked here (`make bench` measures 400).\n\n"
        }
        let checks = Targets.evaluate(report)
        out += checks.isEmpty ? "None of the goals applies to the sizes of this run.\n" : checks.joined(separator: "\n") + "\n"
        return out
    }

    /// The widest line of a table, in characters: a table reads whole in an 100-column
    /// terminal or side by side in a review.
    package static let maxTableWidth = 100

    /// A Markdown table of `header` and `rows`. One wider than ``maxTableWidth`` is split by
    /// columns into as few tables as fit (one blank line between them), the columns in
    /// order, each table repeating the first `keys` columns (what a row is about): every
    /// figure is kept. A cell too wide for any table gets a table of its own with the keys.
    package static func table(_ header: [String], _ rows: [[String]], keys: Int = 1) -> String {
        func cell(_ row: [String], _ column: Int) -> String { row.indices.contains(column) ? row[column] : "" }
        // Each column's share of a line: " cell |", or the separator's " ---: |".
        func width(_ column: Int) -> Int { max(7, 3 + ([header] + rows).map { cell($0, column).count }.max()!) }
        let keyColumns = Array(header.indices.prefix(keys))
        let keyWidth = 1 + keyColumns.map(width).reduce(0, +)
        var groups: [[Int]] = []
        var group: [Int] = [], used = keyWidth
        for column in header.indices.dropFirst(keys) {
            if !group.isEmpty, used + width(column) > maxTableWidth {
                groups.append(group)
                (group, used) = ([], keyWidth)
            }
            group.append(column)
            used += width(column)
        }
        if !group.isEmpty || groups.isEmpty { groups.append(group) }
        return groups.map { group in
            let columns = keyColumns + group
            var out = "| " + columns.map { cell(header, $0) }.joined(separator: " | ") + " |\n"
            out += "|" + columns.map { _ in " ---: |" }.joined() + "\n"
            for row in rows { out += "| " + columns.map { cell(row, $0) }.joined(separator: " | ") + " |\n" }
            return out
        }.joined(separator: "\n")
    }

    /// A `## warm` and a `## cold` section, each when a result has such samples: a table of each
    /// result's `keys` and every path's `median (p90)` in ms, then the ratios of the medians
    /// beside the first key (`ratios`: a column's title, its path and the path it is over).
    static func sampleSections<Result>(_ results: [Result], warm: (Result) -> [String: Distribution], cold: (Result) -> [String: Distribution]?,
                                       keys: [(title: String, cell: (Result) -> String)], paths: [String],
                                       ratios: [(title: String, path: String, over: String)]) -> String {
        var out = ""
        for isCold in [false, true] {
            func pick(_ result: Result) -> [String: Distribution] { isCold ? cold(result) ?? [:] : warm(result) }
            guard results.contains(where: { !pick($0).isEmpty }) else { continue }
            out += "## \(isCold ? "cold" : "warm")\n\n" + table(keys.map(\.title) + paths, results.map { result in
                keys.map { $0.cell(result) } + paths.map { cell(pick(result)[$0], format: milliseconds) }
            }) + "\nRatios of the medians:\n\n"
            out += table([keys[0].title] + ratios.map(\.title), results.map { result in
                [keys[0].cell(result)] + ratios.map { ratio(pick(result)[$0.path]?.median, pick(result)[$0.over]?.median) }
            }) + "\n"
        }
        return out
    }

    /// What a phase table's `other` row holds (`launch --stats` names it so).
    static let otherMeaning = "other = the total less the phases above it (mprotect, initializer bookkeeping: what `launch --stats` "
        + "calls other); each figure is a median, and medians do not add, so other can be below zero."

    /// A phase table: a row per phase of `phases`, then `other`, then `total`; a column per
    /// entry of `columns` (its title, and its medians by phase name, nil when not measured).
    /// Each column adds up: other is the total less the phases above it.
    package static func phaseTable(_ phases: [String], _ columns: [(title: String, medians: [String: Int64]?)],
                                   format: (Int64) -> String = time) -> String {
        func row(_ name: String, _ value: ([String: Int64]) -> Int64?) -> [String] {
            [name] + columns.map { column in column.medians.flatMap(value).map(format) ?? "–" }
        }
        func other(_ medians: [String: Int64]) -> Int64? {
            medians["total"].map { total in phases.reduce(total) { $0 - (medians[$1] ?? 0) } }
        }
        let rows: [[String]] = phases.map { phase in row(phase) { $0[phase] } } + [row("other", other), row("total") { $0["total"] }]
        return table(["phase"] + columns.map(\.title), rows)
    }

    /// A size's column title in a phase table: `1 dylib`, `400 dylibs`.
    static func dylibsTitle(_ size: SizeResult) -> String { size.dylibs == 1 ? "1 dylib" : "\(size.dylibs) dylibs" }

    /// A path's name in a table.
    static func label(_ path: String) -> String { LaunchPath(rawValue: path)?.label ?? path }

    /// `a`'s median over the faster glibc layout's.
    static func glibcRatio(_ values: [String: Distribution], _ a: String) -> String {
        ratio(values[a]?.median, LaunchPath.fasterGlibc(values)?.median)
    }

    /// `median (p90)`, each by `format`; `–` when not measured.
    package static func cell(_ distribution: Distribution?, format: (Int64) -> String = time) -> String {
        guard let distribution else { return "–" }
        return "\(format(distribution.median)) (\(format(distribution.p90)))"
    }

    static func ratio(_ values: [String: Distribution], _ a: String, _ b: String) -> String {
        ratio(values[a]?.median, values[b]?.median)
    }

    /// `a / b` as `N.NN×`; `–` when either was not measured or `b` is 0.
    static func ratio(_ a: Int64?, _ b: Int64?) -> String {
        guard let a, let b, b > 0 else { return "–" }
        return String(format: "%.2f×", Double(a) / Double(b))
    }

    /// Nanoseconds as µs or ms.
    static func time(_ nanoseconds: Int64) -> String {
        nanoseconds < 1_000_000 ? String(format: "%.0f µs", Double(nanoseconds) / 1e3) : milliseconds(nanoseconds)
    }

    static func microseconds(_ nanoseconds: Double) -> String { String(format: "%.2f µs", nanoseconds / 1e3) }
    static func milliseconds(_ nanoseconds: Double) -> String { String(format: "%.2f ms", nanoseconds / 1e6) }
    static func milliseconds(_ nanoseconds: Int64) -> String { milliseconds(Double(nanoseconds)) }

    static func megabytes(_ kilobytes: Int64) -> String { String(format: "%.1f MB", Double(kilobytes) / 1024) }
}
