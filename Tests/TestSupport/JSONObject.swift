import Foundation
import Testing

/// `text` parsed as a JSON object; a failed requirement naming the text's start when it is not one.
package func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text.prefix(400))")
}
