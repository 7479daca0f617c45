import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import LaunchBench
import Testing
import TestSupport

/// The time-vs-dylibs chart drawn from the committed results: every legend label fits in
/// the picture, and each path is drawn with a marker of its own, so paths whose times
/// coincide stay visible.
@Suite(.bounded) struct ChartTests {
    static func committedReport() throws -> BenchReport {
        let json = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/results/bench.json"))
        return try LaunchBench.decodeReport(json)
    }

    /// Every key of a decoded JSON value, at any depth, with a capital letter (camelCase
    /// where bench.json is snake_case; its maps keyed by path, `floor-protected`, keep their names).
    static func keysWithCapitals(_ value: Any) -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { key, member in (key == key.lowercased() ? [] : [key]) + keysWithCapitals(member) }
        }
        if let array = value as? [Any] { return array.flatMap(keysWithCapitals) }
        return []
    }

    /// The paths (key/key/…) of every measured distribution (an object with a `median`)
    /// that no key on the way to it gives a unit (`_ns`, `_kilobytes`).
    static func distributionsWithoutUnit(_ value: Any, path: String = "", unit: Bool = false) -> [String] {
        if let object = value as? [String: Any] {
            if object["median"] != nil { return unit ? [] : [path] }
            return object.flatMap { key, member in
                distributionsWithoutUnit(member, path: path + "/" + key, unit: unit || key.hasSuffix("_ns") || key.hasSuffix("_kilobytes"))
            }
        }
        if let array = value as? [Any] { return array.flatMap { distributionsWithoutUnit($0, path: path + "[]", unit: unit) } }
        return []
    }

    /// The committed bench.json is in the current snake_case layout, every time under a key
    /// that says its unit, and it reads back; so is the pooled summary of tools/bench-processes.
    @Test func committedResultsAreSnakeCase() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/results/bench.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["schema_version"] as? Int == BenchReport.currentSchemaVersion)
        #expect(Self.keysWithCapitals(object).isEmpty, "\(Set(Self.keysWithCapitals(object)))")
        #expect(Self.distributionsWithoutUnit(object).isEmpty, "\(Self.distributionsWithoutUnit(object).prefix(5))")
        #expect(try !Self.committedReport().sizes.isEmpty)
        let summary = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/processes/summary.json"))
        let pooled = try #require(try JSONSerialization.jsonObject(with: summary) as? [String: Any])
        #expect(pooled["schema_version"] as? Int == BenchReport.currentSchemaVersion)
        #expect(Self.keysWithCapitals(pooled).isEmpty, "\(Set(Self.keysWithCapitals(pooled)))")
    }

    @Test func timeVersusDylibsLegendFits() throws {
        let svg = SVGCharts.timeVersusDylibs(try Self.committedReport())
        let recorder = TextRecorder()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = recorder
        #expect(parser.parse())
        let width = try #require(recorder.width)
        for label in LaunchPath.allCases.map(SVGCharts.legendName) {
            let placed = try #require(recorder.texts.first { $0.text == label }, "no legend entry \(label)")
            // 12-pixel sans-serif: at most 7 pixels a character.
            #expect(placed.x + 7 * Double(label.count) <= width, "\(label) at x \(placed.x) runs past \(width)")
        }
    }

    @Test func everyPathHasItsOwnMarker() {
        let markers = LaunchPath.allCases.map { SVGCharts.marker($0, 10, 10, "#000000") }
        #expect(Set(markers).count == LaunchPath.allCases.count)
    }
}

/// The svg width and every text element's x and content.
final class TextRecorder: NSObject, XMLParserDelegate {
    var width: Double?
    var texts: [(x: Double, text: String)] = []
    private var current: (x: Double, text: String)?

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if name == "svg" { width = attributes["width"].flatMap(Double.init) }
        if name == "text", attributes["text-anchor"] == "start" { current = (Double(attributes["x"] ?? "") ?? 0, "") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { current?.text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "text", let current { texts.append(current) }
        current = nil
    }
}
