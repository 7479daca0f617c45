/// The bind-target table read through a pointer into its two columns
/// (``BindTargetTable``): the same records and checks as the checked parse, one compare
/// per byte. It answers only for a table it reads whole; at anything else (a truncated or
/// oversized number, an unknown kind, an image index out of range, an offset outside its
/// image) it returns nil and the checked parse reads the table again to say what is wrong.
enum UnsafeBindTargetScan {
    /// `count` targets from the start of `bytes`: the columns and the bytes they took.
    static func scan(_ bytes: ArraySlice<UInt8>, count: Int, imageSizes: [UInt64])
        -> (images: [Int32], values: [UInt64], consumed: Int)? {
        // Every target takes at least one byte: a count past the bytes cannot be whole.
        guard count <= bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw in
            imageSizes.withUnsafeBufferPointer { sizes in
                var stream = UnsafeRawStream(raw)
                var failed = false
                var images: [Int32] = []
                // Both columns are written once, in order; on failure nothing is returned.
                let values = [UInt64](unsafeUninitializedCapacity: count) { values, valuesInitialized in
                    images = [Int32](unsafeUninitializedCapacity: count) { images, initialized in
                        for index in 0..<count {
                            switch stream.u8() {
                            case 0:
                                guard let image = stream.uleb(), image <= UInt64(Int32.max), Int(image) < sizes.count,
                                      let offset = stream.uleb(), offset < sizes[Int(image)] else { failed = true; return }
                                images[index] = Int32(image)
                                values[index] = offset
                            case 1:
                                guard let value = stream.uleb() else { failed = true; return }
                                images[index] = BindTargetTable.absolute
                                values[index] = value
                            case 2:
                                images[index] = BindTargetTable.missingWeakImport
                                values[index] = 0
                            default:
                                failed = true
                                return
                            }
                        }
                        initialized = count
                    }
                    valuesInitialized = failed ? 0 : count
                }
                return failed ? nil : (images, values, stream.consumed)
            }
        }
    }
}
