import TestSupport
import Foundation
import ClosureCache
import LoaderCore
import Testing
import LaunchPlan
import ClosureFormat

/// Launch closures: install, verify, dump, reproducibility, equality with the slow path,
/// corruption and staleness.
@Suite(.bounded) struct ClosureTests {
    static let apps = (try? FixtureApp.all()) ?? []
    static let launchable = apps.filter(\.launches)
    static let failing = apps.filter { !$0.launches }
}

/// Fixups as memory ends up holding them: one per location, the last one written wins.
func finalFixups(_ fixups: [ResolvedFixup]) -> [UInt64: ResolvedFixup.Kind] {
    Dictionary(fixups.map { ($0.vmOffset, $0.kind) }, uniquingKeysWith: { _, last in last })
}

