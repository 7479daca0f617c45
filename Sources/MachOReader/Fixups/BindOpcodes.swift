/// Which of the three dyld-info bind streams a bind comes from.
public enum BindStreamKind: String, Sendable, CaseIterable {
    case regular, lazy, weak
}
