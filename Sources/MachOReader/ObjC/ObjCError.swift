/// Objective-C metadata that cannot be right: the image it was read from (its index in the
/// ``ObjCAddressSpace``, when the address lies in one), the address, and what was wrong.
public struct ObjCError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The image holding the bad bytes, nil when the address lies in no image.
    public var image: Int?
    /// The runtime address of the bad bytes (or of the pointer that leads nowhere).
    public var address: UInt64
    public var what: String

    public init(image: Int?, address: UInt64, what: String) {
        self.image = image
        self.address = address
        self.what = what
    }

    public var description: String { "Objective-C metadata at 0x\(String(address, radix: 16)): \(what)" }
}
