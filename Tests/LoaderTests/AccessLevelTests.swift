import Foundation
import Testing

/// Nothing under Sources/ is `public`: the library products serve this package's own
/// Benchmarks and Fuzz packages, which compile as members of it (`-package-name`), so
/// `package` is the widest access any declaration needs.
@Suite(.bounded) struct AccessLevelTests {
    @Test func noDeclarationIsPublic() throws {
        let sources = try OneLauncherTests.sources()
        #expect(sources.count > 100)
        let declaration = /(^|[\s(])public(\s|\()/
        let publicLines = sources.flatMap { source in
            source.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line -> String? in
                let code = line.trimmingCharacters(in: .whitespaces)
                // Code before any string literal: a message may say "public key".
                let beforeStrings = code.prefix { $0 != "\"" }
                guard !code.hasPrefix("//"), beforeStrings.contains(declaration) else { return nil }
                return "\(source.path):\(index + 1): \(code)"
            }
        }
        #expect(publicLines.isEmpty, "\(publicLines.prefix(10).joined(separator: "\n"))")
    }
}
