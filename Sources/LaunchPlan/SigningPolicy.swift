/// Which images a launch accepts, by their code signatures (docs/code-signing.md, "Policy").
/// Every policy refuses a signed image whose signature does not verify; the default accepts
/// unsigned images (macOS x86_64's rule).
///
/// * `requireSignatures` refuses an unsigned image (the arm64 rule).
/// * `libraryValidation` refuses, as AMFI does, any image but the main executable (image 0)
///   not signed with its team ID: a platform binary is accepted whatever its team ID, unless
///   the main executable is one, whose libraries must all be. An image without a team ID is
///   refused even when the main executable has none: an ad-hoc signature names no signer.
package struct SigningPolicy: Equatable, Hashable, Sendable {
    package var requireSignatures: Bool
    package var libraryValidation: Bool

    package init(requireSignatures: Bool = false, libraryValidation: Bool = false) {
        (self.requireSignatures, self.libraryValidation) = (requireSignatures, libraryValidation)
    }

    /// Unsigned images load, signed ones must verify.
    package static let `default` = SigningPolicy()

    /// Every policy and the name a closure's binding records and a mismatch reports: `default`,
    /// `require-signatures`, `library-validation`, or both joined by `+`.
    private static let names: [(policy: SigningPolicy, name: String)] = [
        (SigningPolicy(), "default"),
        (SigningPolicy(requireSignatures: true), "require-signatures"),
        (SigningPolicy(libraryValidation: true), "library-validation"),
        (SigningPolicy(requireSignatures: true, libraryValidation: true), "require-signatures+library-validation"),
    ]

    package var name: String { Self.names.first { $0.policy == self }?.name ?? "default" }

    /// The policy ``name`` names; nil for any other string.
    package init?(name: String) {
        guard let named = Self.names.first(where: { $0.name == name }) else { return nil }
        self = named.policy
    }

    package enum Rule: String, Sendable {
        case requireSignatures = "--require-signatures"
        case libraryValidation = "--library-validation"
    }

    /// Checks every image of a launch, in load order, from its verified signature (nil:
    /// unsigned); the first refused is thrown with the rule and why. Reads nothing: install and
    /// dyld2 pass what they verified, the fast path what its closure recorded.
    package func check(_ images: [(path: String, signature: SignedImage?)]) throws(LoadError) {
        if requireSignatures, let unsigned = images.first(where: { $0.signature == nil }) {
            throw .signingPolicy(path: unsigned.path, rule: .requireSignatures,
                                 why: "the image is unsigned; every image must carry a valid signature")
        }
        guard libraryValidation, let main = images.first else { return }
        let mainTeam = main.signature?.teamID
        let mainIsPlatform = main.signature?.isPlatformBinary ?? false
        for image in images.dropFirst() {
            let signature = image.signature
            if signature?.isPlatformBinary == true { continue }
            let why: String
            if mainIsPlatform {
                why = "the main executable \(main.path) is a platform binary and this image is not"
            } else if let team = signature?.teamID, let mainTeam {
                if team == mainTeam { continue }
                why = "team ID \(team), not the main executable's (\(mainTeam))"
            } else if let team = signature?.teamID {
                why = "team ID \(team), and the main executable \(main.path) has none (\(main.signature == nil ? "unsigned" : "signed ad hoc"))"
            } else {
                why = (signature == nil ? "unsigned" : "signed ad hoc (no team ID)")
                    + ", and not a platform binary; only the main executable's team ID (\(mainTeam ?? "none")) or a platform binary is accepted"
            }
            throw .signingPolicy(path: image.path, rule: .libraryValidation, why: why)
        }
    }
}
