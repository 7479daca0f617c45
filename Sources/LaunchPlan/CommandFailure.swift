/// A failure of what the command line asked for (an option's value, a key file, a stub root,
/// a benchmark's tool), as every command reports it: `dyld3: WHAT: WHY[; FIX]` on stderr. The
/// other errors become one of these only where a command reports them.
package struct CommandFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// A path, an install name, or an option with its value.
    package var what: String
    package let why: String
    package var fix: String?
    /// A stable word for scripts: `missing-library`, `no-closure`, `bad-root`, `key`, ….
    package let kind: String

    package init(what: String, why: String, fix: String? = nil, kind: String) {
        (self.what, self.why, self.fix, self.kind) = (what, why, fix, kind)
    }

    /// `PATH: WHY…` split at its first ": " (a multi-line description joined with "; ").
    package init(splitting text: String, kind: String) {
        let flat = text.split(separator: "\n").map { line in
            String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        }.joined(separator: "; ")
        if let colon = flat.firstRange(of: ": ") {
            self.init(what: String(flat[..<colon.lowerBound]), why: String(flat[colon.upperBound...]), kind: kind)
        } else {
            self.init(what: "error", why: flat, kind: kind)
        }
    }

    package var description: String { "\(what): \(why)" + (fix.map { "; \($0)" } ?? "") }

    package var line: String { "dyld3: " + description }
}
