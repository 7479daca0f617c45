/// A JSON document built in memory and written with keys in insertion order, so
/// `dyld3 inspect --json` output is stable and diffable. Documents too long to hold go
/// out through ``JSONStream`` instead, in the same layout.
package enum JSONValue: Sendable, Equatable {
    case null, bool(Bool), int(Int64), uint(UInt64), string(String), array([JSONValue])
    case object([(String, JSONValue)])

    /// The version of every JSON document `dyld3` prints or writes (`schema_version`, the
    /// first member): snake_case keys, units in key names, `{"error": {...}}` on failure
    /// (docs/json.md). Raised when a key is renamed or removed.
    package static let schemaVersion: Int64 = 1

    package static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized() == b.serialized() }

    /// The document pretty-printed, two spaces per level (as ``JSONStream`` writes it).
    package func serialized() -> String {
        var out = ""
        var json = JSONStream()
        json.member(nil, self, to: &out)
        return out
    }

    /// A value that is neither an array nor an object (``JSONStream/member(_:_:to:)`` walks those).
    fileprivate func writeScalar<Output: TextOutputStream>(to out: inout Output) {
        switch self {
        case let .bool(value): out.write(value ? "true" : "false")
        case let .int(value): out.write(String(value))
        case let .uint(value): out.write(String(value))
        case let .string(value): JSONValue.writeString(value, to: &out)
        default: out.write("null")
        }
    }

    /// `value` as a JSON string literal.
    static func writeString<Output: TextOutputStream>(_ value: String, to out: inout Output) {
        out.write("\"")
        var plainStart = value.unicodeScalars.startIndex
        var index = plainStart
        let scalars = value.unicodeScalars
        while index != scalars.endIndex {
            let scalar = scalars[index]
            let escape: String? = switch scalar {
            case "\"": "\\\""
            case "\\": "\\\\"
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            case let s where s.value < 0x20: "\\u" + Text.hex(UInt64(s.value), width: 4)
            default: nil
            }
            if let escape {
                out.write(String(scalars[plainStart..<index]))
                out.write(escape)
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        out.write(String(scalars[plainStart..<index]))
        out.write("\"")
    }
}

/// A JSON document written while it is produced, two spaces per level, members in the order
/// written; ``JSONValue/serialized()`` writes a whole value through it. `inspect --json`
/// writes tables of any length through it: what it holds is one flag per open container,
/// so memory follows the nesting, not the rows.
struct JSONStream {
    private enum Container { case object, array }
    private var open: [(container: Container, hasMembers: Bool)] = []

    /// Opens an object, as the member `key` of the enclosing object (nil in an array or at
    /// the top).
    mutating func beginObject<Output: TextOutputStream>(_ key: String? = nil, to out: inout Output) { begin(key, .object, to: &out) }

    /// Opens an array, as the member `key` of the enclosing object (nil in an array).
    mutating func beginArray<Output: TextOutputStream>(_ key: String? = nil, to out: inout Output) { begin(key, .array, to: &out) }

    private mutating func begin<Output: TextOutputStream>(_ key: String?, _ container: Container, to out: inout Output) {
        startMember(key, to: &out)
        out.write(container == .object ? "{" : "[")
        open.append((container, false))
    }

    /// Writes `value` whole, as the member `key` of the enclosing object (nil in an array).
    mutating func member<Output: TextOutputStream>(_ key: String?, _ value: JSONValue, to out: inout Output) {
        switch value {
        case let .array(values):
            beginArray(key, to: &out)
            for value in values { member(nil, value, to: &out) }
            end(to: &out)
        case let .object(members):
            beginObject(key, to: &out)
            self.members(members, to: &out)
            end(to: &out)
        default:
            startMember(key, to: &out)
            value.writeScalar(to: &out)
        }
    }

    /// Writes each of `members` whole into the enclosing object.
    mutating func members<Output: TextOutputStream>(_ members: [(String, JSONValue)], to out: inout Output) {
        for (key, value) in members { member(key, value, to: &out) }
    }

    /// Writes the array `key` (nil in an array): each value `body` hands to `element` is one
    /// element, written whole.
    mutating func array<Output: TextOutputStream, Failure: Error>(
        _ key: String?, to out: inout Output, _ body: (_ element: (JSONValue) -> Void) throws(Failure) -> Void
    ) throws(Failure) {
        beginArray(key, to: &out)
        try body { member(nil, $0, to: &out) }
        end(to: &out)
    }

    /// Writes the array `key` of `count` elements, element `index` being `element(index)`.
    mutating func array<Output: TextOutputStream, Failure: Error>(
        _ key: String?, count: Int, to out: inout Output, _ element: (_ index: Int) throws(Failure) -> JSONValue
    ) throws(Failure) {
        try array(key, to: &out) { (write) throws(Failure) in
            for index in 0..<count { write(try element(index)) }
        }
    }

    /// Closes the innermost open object or array.
    mutating func end<Output: TextOutputStream>(to out: inout Output) {
        guard let (container, hasMembers) = open.popLast() else { return }
        if hasMembers { out.write("\n" + Self.pad(open.count)) }
        out.write(container == .object ? "}" : "]")
    }

    private mutating func startMember<Output: TextOutputStream>(_ key: String?, to out: inout Output) {
        guard let last = open.indices.last else { return }
        out.write(open[last].hasMembers ? ",\n" : "\n")
        open[last].hasMembers = true
        out.write(Self.pad(open.count))
        if let key {
            JSONValue.writeString(key, to: &out)
            out.write(": ")
        }
    }

    private static func pad(_ level: Int) -> String { String(repeating: " ", count: 2 * level) }
}
