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

    /// Compact when `indent` is nil, else pretty-printed with that many spaces per level.
    package func serialized(indent: Int? = 2) -> String {
        var out = ""
        write(to: &out, indent: indent, level: 0)
        return out
    }

    /// Writes the value as it would appear nested `level` deep in a document.
    func write<Output: TextOutputStream>(to out: inout Output, indent: Int?, level: Int) {
        switch self {
        case .null: out.write("null")
        case let .bool(value): out.write(value ? "true" : "false")
        case let .int(value): out.write(String(value))
        case let .uint(value): out.write(String(value))
        case let .string(value): JSONValue.writeString(value, to: &out)
        case let .array(values): Self.writeContainer("[", values.map { (nil, $0) }, "]", to: &out, indent: indent, level: level)
        case let .object(members): Self.writeContainer("{", members.map { ($0, $1) }, "}", to: &out, indent: indent, level: level)
        }
    }

    /// An array's elements (no keys) or an object's members between `open` and `close`.
    private static func writeContainer<Output: TextOutputStream>(
        _ open: String, _ members: [(String?, JSONValue)], _ close: String, to out: inout Output, indent: Int?, level: Int
    ) {
        if members.isEmpty { out.write(open + close); return }
        let newline = indent == nil ? "" : "\n"
        let pad = { (depth: Int) in String(repeating: " ", count: (indent ?? 0) * depth) }
        out.write(open + newline)
        for (index, (key, value)) in members.enumerated() {
            out.write(pad(level + 1))
            if let key {
                JSONValue.writeString(key, to: &out)
                out.write(indent == nil ? ":" : ": ")
            }
            value.write(to: &out, indent: indent, level: level + 1)
            out.write((index + 1 < members.count ? "," : "") + newline)
        }
        out.write(pad(level) + close)
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
