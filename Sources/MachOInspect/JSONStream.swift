/// A JSON document written while it is produced, laid out exactly as
/// ``JSONValue/serialized(indent:)`` lays out the same document (two spaces per level, members
/// in the order written). `inspect --json` writes tables of any length through it: what it
/// holds is one flag per open container, so memory follows the nesting, not the rows.
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
        startMember(key, to: &out)
        value.write(to: &out, indent: 2, level: open.count)
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
