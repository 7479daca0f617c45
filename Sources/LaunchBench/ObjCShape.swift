/// The Objective-C part of the bench's apps (`tools/gen-app --objc-classes N
/// --objc-categories M --objc-selrefs K`): per framework N classes, per image M
/// categories and K selector references (message sends).
package struct ObjCShape: Codable, Sendable, Equatable {
    package var classes: Int, categories: Int, selectorReferences: Int

    package init(classes: Int, categories: Int, selectorReferences: Int) {
        (self.classes, self.categories, self.selectorReferences) = (classes, categories, selectorReferences)
    }

    /// The options that make `tools/gen-app` generate this shape.
    var generatorArguments: [String] {
        ["--objc-classes", "\(classes)", "--objc-categories", "\(categories)", "--objc-selrefs", "\(selectorReferences)"]
    }

    /// Part of the generated app's directory name, so each shape is cached on its own.
    var directorySuffix: String { "-objc\(classes)x\(categories)x\(selectorReferences)" }
}

/// How much of a launch the Objective-C step takes: its warm median against the
/// launch's warm median total, for dyld2 (worked out on every launch) and dyld3 (copied
/// from the closure).
package struct ObjCShare: Codable, Sendable {
    /// Writes the step makes (selector references, method-list names, the runtime's
    /// tables): the closure's ObjC record.
    package var writes: Int
    package var dyld2: Int64, dyld2Total: Int64
    package var dyld3: Int64, dyld3Total: Int64

    enum CodingKeys: String, CodingKey {
        case writes, dyld2 = "dyld2Ns", dyld2Total = "dyld2TotalNs", dyld3 = "dyld3Ns", dyld3Total = "dyld3TotalNs"
    }

    /// `objc / total` of each path (0 when the total is 0).
    package var dyld2Fraction: Double { dyld2Total > 0 ? Double(dyld2) / Double(dyld2Total) : 0 }
    package var dyld3Fraction: Double { dyld3Total > 0 ? Double(dyld3) / Double(dyld3Total) : 0 }

    init(writes: Int, dyld2Phases: [String: Int64], dyld3Phases: [String: Int64]) {
        self.writes = writes
        dyld2 = dyld2Phases["objc"] ?? 0
        dyld2Total = dyld2Phases["total"] ?? 0
        dyld3 = dyld3Phases["objc"] ?? 0
        dyld3Total = dyld3Phases["total"] ?? 0
    }
}
