/// The bind-target table read through a pointer into its two columns: the checked parse's
/// records and checks, one compare per byte, except that image targets' offsets are checked
/// afterwards, so the scan can run before the image records are read. At anything it does not
/// accept it returns nil, and the checked parse reads the table again to say what is wrong.
enum UnsafeBindTargetScan {
    /// `count` targets from the start of `bytes`: the columns and the bytes they took.
    static func scan(_ bytes: ArraySlice<UInt8>, count: Int, imageCount: Int) -> BindTargetTable.Scan? {
        // Every target takes at least one byte: a count past the bytes cannot be whole.
        guard count <= bytes.count else { return nil }
        var images: [Int32] = []
        var consumed: Int?
        // Both columns are written once, in order; on failure neither is returned.
        let values = unsafe [UInt64](unsafeUninitializedCapacity: count) { values, valuesInitialized in
            images = unsafe [Int32](unsafeUninitializedCapacity: count) { images, imagesInitialized in
                consumed = unsafe bytes.withUnsafeBytes { raw in unsafe fill(raw, count: count, imageCount: imageCount, images: images, values: values) }
                imagesInitialized = consumed == nil ? 0 : count
            }
            valuesInitialized = consumed == nil ? 0 : count
        }
        guard let consumed else { return nil }
        return (images, values, consumed)
    }

    /// Reads `count` targets into both columns: the bytes read, or nil. The stream is this
    /// function's own, so the loop keeps it in registers.
    private static func fill(
        _ raw: UnsafeRawBufferPointer, count: Int, imageCount: Int,
        images: UnsafeMutableBufferPointer<Int32>, values: UnsafeMutableBufferPointer<UInt64>
    ) -> Int? {
        var stream = unsafe UnsafeRawStream(raw)
        let imageCount = UInt64(imageCount)
        for index in 0..<count {
            switch stream.u8() {
            case 0:
                guard let image = stream.uleb(), image <= UInt64(Int32.max), image < imageCount,
                      let offset = stream.uleb() else { return nil }
                unsafe images[index] = Int32(truncatingIfNeeded: image)
                unsafe values[index] = offset
            case 1:
                guard let value = stream.uleb() else { return nil }
                unsafe images[index] = BindTargetTable.absolute
                unsafe values[index] = value
            case 2:
                unsafe images[index] = BindTargetTable.missingWeakImport
                unsafe values[index] = 0
            default:
                return nil
            }
        }
        return stream.consumed
    }
}
