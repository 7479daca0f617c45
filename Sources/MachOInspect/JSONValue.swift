/// A JSON document built in memory and written with keys in insertion order, so
/// `dyld3 inspect --json` output is stable and diffable.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        a.serialized() == b.serialized()
    }

    /// Compact when `indent` is nil, else pretty-printed with that many spaces per level.
    public func serialized(indent: Int? = 2) -> String {
        var out = ""
        write(to: &out, indent: indent, level: 0)
        return out
    }

    private func write(to out: inout String, indent: Int?, level: Int) {
        let newline = indent == nil ? "" : "\n"
        let pad = { (depth: Int) in String(repeating: " ", count: (indent ?? 0) * depth) }
        switch self {
        case .null: out += "null"
        case let .bool(value): out += value ? "true" : "false"
        case let .int(value): out += String(value)
        case let .uint(value): out += String(value)
        case let .string(value): JSONValue.writeString(value, to: &out)
        case let .array(values):
            if values.isEmpty { out += "[]"; return }
            out += "[" + newline
            for (index, value) in values.enumerated() {
                out += pad(level + 1)
                value.write(to: &out, indent: indent, level: level + 1)
                out += (index + 1 < values.count ? "," : "") + newline
            }
            out += pad(level) + "]"
        case let .object(members):
            if members.isEmpty { out += "{}"; return }
            out += "{" + newline
            for (index, (key, value)) in members.enumerated() {
                out += pad(level + 1)
                JSONValue.writeString(key, to: &out)
                out += indent == nil ? ":" : ": "
                value.write(to: &out, indent: indent, level: level + 1)
                out += (index + 1 < members.count ? "," : "") + newline
            }
            out += pad(level) + "}"
        }
    }

    private static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20:
                out += "\\u" + Text.hex(UInt64(s.value), width: 4)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
