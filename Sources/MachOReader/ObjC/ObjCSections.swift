/// Where an image keeps its Objective-C metadata: the `__objc_*` sections of its data
/// segments, as ranges of offsets from its preferred base.
package struct ObjCSections: Sendable {
    /// A section as an offset from the image's preferred base and a size.
    package struct Range: Equatable, Sendable {
        package let vmOffset: UInt64, size: UInt64
        /// Number of 8-byte pointers it holds.
        package var pointerCount: Int { Int(size / 8) }
    }

    package let imageInfo: ObjCImageInfo, classList: Range?, nonLazyClassList: Range?, categoryList: Range?
    package let nonLazyCategoryList: Range?, selectorReferences: Range?
    /// `__objc_protolist` (the image's protocols) and `__objc_protorefs` (`@protocol` references).
    package let protocolList: Range?, protocolReferences: Range?

    /// nil when the image has no `__objc_imageinfo` (it has no Objective-C metadata).
    package init?(image: MachOImage) throws(MachOError) {
        guard let info = ObjCSections.section("__objc_imageinfo", in: image) else { return nil }
        guard info.size >= UInt64(ObjCImageInfo.size) else {
            throw .malformed("__objc_imageinfo is \(info.size) bytes", at: Int(info.fileOffset))
        }
        imageInfo = try ObjCImageInfo(parsing: image.fileBytes(offset: UInt64(info.fileOffset), size: UInt64(ObjCImageInfo.size)))
        let base = image.preferredLoadAddress
        func range(_ name: String) throws(MachOError) -> Range? {
            guard let section = ObjCSections.section(name, in: image) else { return nil }
            guard section.address >= base, section.size % 8 == 0 else {
                throw .malformed("\(name) at \(hex(section.address)) size \(section.size) is not a pointer list", at: Int(section.fileOffset))
            }
            return Range(vmOffset: section.address - base, size: section.size)
        }
        classList = try range("__objc_classlist")
        nonLazyClassList = try range("__objc_nlclslist")
        categoryList = try range("__objc_catlist")
        nonLazyCategoryList = try range("__objc_nlcatlist")
        selectorReferences = try range("__objc_selrefs")
        protocolList = try range("__objc_protolist")
        protocolReferences = try range("__objc_protorefs")
    }

    /// The first section named `name` in a segment whose name starts with `__DATA`.
    static func section(_ name: String, in image: MachOImage) -> Section? {
        image.segments.lazy.filter { $0.name.hasPrefix("__DATA") }.compactMap { $0.sections.first { $0.name == name } }.first
    }

    /// The runtime's table section (our libobjc's `__DATA,__objc_fxtables`), if `image` has it.
    package static func runtimeTables(in image: MachOImage) -> Range? {
        guard let section = section("__objc_fxtables", in: image), section.address >= image.preferredLoadAddress else { return nil }
        return Range(vmOffset: section.address - image.preferredLoadAddress, size: section.size)
    }
}
