/// A failure of what the command line asked for (an option's value, a key file, a stub
/// root, a benchmark's tool or child process), as every command reports it: one line on
/// stderr, `dyld3: WHAT: WHY`, with the fix after it when there is one
/// (`dyld3: WHAT: WHY; FIX`). The other errors become one of these only where a command
/// reports them (the `dyld3` tool's `CommandFailure.init(_:context:)`).
public struct CommandFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What failed: a path, an install name, or an option with its value.
    public var what: String
    /// Why it failed.
    public let why: String
    /// What to do about it, when something can be done.
    public var fix: String?
    /// A stable word for scripts: `missing-library`, `no-closure`, `bad-root`, `key`, ….
    public let kind: String

    public init(what: String, why: String, fix: String? = nil, kind: String) {
        self.what = what
        self.why = why
        self.fix = fix
        self.kind = kind
    }

    /// `PATH: WHY…` split at its first ": " (a multi-line description joined with "; ").
    public init(splitting text: String, kind: String) {
        let flat = text.split(separator: "\n").map { line in
            String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        }.joined(separator: "; ")
        if let colon = flat.firstRange(of: ": ") {
            self.init(what: String(flat[..<colon.lowerBound]), why: String(flat[colon.upperBound...]), kind: kind)
        } else {
            self.init(what: "error", why: flat, kind: kind)
        }
    }

    public var description: String { "\(what): \(why)" + (fix.map { "; \($0)" } ?? "") }

    /// The line written to stderr.
    public var line: String { "dyld3: " + description }
}
