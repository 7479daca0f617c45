/// Why a benchmark could not be run: a tool failed, an input is missing or unusable.
public enum BenchError: Error, CustomStringConvertible {
    case failed(String)

    public var description: String {
        switch self {
        case let .failed(text): text
        }
    }
}
