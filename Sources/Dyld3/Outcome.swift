import LaunchPlan

/// A step's value, or the ``ClosureError`` it failed with, handed between a launch and its
/// helper. Not a `Result`: the copies of a `Result<_, ClosureError>` need its metadata, and
/// building that makes a fresh process search every protocol conformance it holds for
/// `ClosureError: Error` (docs/performance.md, "Where a fresh process's time goes").
enum Outcome<Value> {
    case success(Value)
    case failure(ClosureError)

    init(_ body: () throws(ClosureError) -> Value) {
        do {
            self = .success(try body())
        } catch {
            self = .failure(error)
        }
    }

    func get() throws(ClosureError) -> Value {
        switch self {
        case let .success(value): return value
        case let .failure(error): throw error
        }
    }

    func map<Other>(_ transform: (Value) -> Other) -> Outcome<Other> {
        switch self {
        case let .success(value): return .success(transform(value))
        case let .failure(error): return .failure(error)
        }
    }
}

extension Outcome: Sendable where Value: Sendable {}
