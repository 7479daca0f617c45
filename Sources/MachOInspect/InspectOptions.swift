import MachOReader

/// A table `dyld3 inspect` can print. The llvm-objdump-compatible ones print the same
/// rows as `llvm-objdump-19 --macho --<flag>`.
package enum InspectTable: String, CaseIterable, Sendable {
    case rebase, bind, lazyBind, weakBind, dyldInfo, chainedFixups, exportsTrie, deps, objc, objcSummary, codeSignature, threadLocals, interpose
    case loadCommands

    /// The command-line flag, which is also llvm-objdump's flag where it has one: the case's
    /// name in kebab case (`lazyBind`: `--lazy-bind`).
    package var flag: String {
        "--" + rawValue.reduce(into: "") { $0 += $1.isUppercase ? "-" + $1.lowercased() : String($1) }
    }

    /// llvm-objdump's flag printing the same rows (nil for the tables it has no flag for).
    package var objdumpFlag: String? {
        switch self {
        case .objc: "--objc-meta-data"
        case .deps, .objcSummary, .codeSignature, .threadLocals, .interpose, .loadCommands: nil
        default: flag
        }
    }

    /// The order in which llvm-objdump prints its sections when several are asked for (the
    /// load commands first, where it prints `--private-headers`).
    package static let objdumpOrder: [InspectTable] = [
        .loadCommands, .dyldInfo, .chainedFixups, .deps, .exportsTrie, .rebase, .bind, .lazyBind, .weakBind, .objc, .objcSummary, .codeSignature, .threadLocals, .interpose,
    ]
}

/// Which slices of a universal file to inspect.
package enum ArchSelection: Equatable, Sendable {
    /// llvm-objdump's default: the host's architecture when the file has it, else every slice.
    case host
    /// Every slice.
    case all
    /// One named architecture.
    case named(String)

    package init(_ argument: String?) {
        switch argument {
        case nil: self = .host
        case "all"?: self = .all
        case let name?: self = .named(name)
        }
    }
}
