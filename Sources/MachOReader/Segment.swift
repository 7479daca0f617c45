/// VM protection bits (`VM_PROT_READ`, `VM_PROT_WRITE`, `VM_PROT_EXECUTE`).
package struct VMProtection: OptionSet, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }
    /// Concrete: the default's witness table costs a fresh process a first-use instantiation.
    package func contains(_ member: Self) -> Bool { rawValue & member.rawValue == member.rawValue }
    package static let read = VMProtection(rawValue: 1), write = VMProtection(rawValue: 2), execute = VMProtection(rawValue: 4)
    // Combinations as constants: an array literal of an option set is built element by element
    // at run time, through the standard library's unspecialized `SetAlgebra.init`.
    package static let readWrite = VMProtection(rawValue: 3), readExecute = VMProtection(rawValue: 5), readWriteExecute = VMProtection(rawValue: 7)

    /// `r-x` style.
    package var description: String {
        (contains(.read) ? "r" : "-") + (contains(.write) ? "w" : "-") + (contains(.execute) ? "x" : "-")
    }
}

/// `section_64`: a named range inside a segment.
package struct Section: Equatable, Sendable {
    package static let size = 80
    package let name: String, segmentName: String, address: UInt64, size: UInt64
    package let fileOffset: UInt32, alignment: UInt32, relocationOffset: UInt32, relocationCount: UInt32
    package let flags: UInt32, reserved1: UInt32, reserved2: UInt32, reserved3: UInt32

    /// `SECTION_TYPE`: the low byte of `flags`.
    package var type: UInt8 { UInt8(flags & 0xff) }

    package static let typeModInitFuncPointers: UInt8 = 0x9, typeInitFuncOffsets: UInt8 = 0x16
    /// `S_INTERPOSING`: (replacement, replacee) pointer pairs.
    package static let typeInterposing: UInt8 = 0xd
    /// `S_THREAD_LOCAL_REGULAR` (`__thread_data`), `S_THREAD_LOCAL_ZEROFILL`
    /// (`__thread_bss`), `S_THREAD_LOCAL_VARIABLES` (`__thread_vars`: the descriptors).
    package static let typeThreadLocalRegular: UInt8 = 0x11, typeThreadLocalZerofill: UInt8 = 0x12, typeThreadLocalVariables: UInt8 = 0x13

    /// Whether the section holds interposing tuples, by dyld's test (dyld4
    /// `Header::hasInterposingTuples`): its type, or `__interpose` in a `__DATA*` or `__AUTH*` segment.
    package var holdsInterposingTuples: Bool {
        type == Section.typeInterposing || (name == "__interpose" && (segmentName.hasPrefix("__DATA") || segmentName.hasPrefix("__AUTH")))
    }

    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, Section.size)
        name = try view.fixedString(0, 16)
        segmentName = try view.fixedString(16, 16)
        address = try view.u64(32)
        size = try view.u64(40)
        fileOffset = try view.u32(48)
        alignment = try view.u32(52)
        relocationOffset = try view.u32(56)
        relocationCount = try view.u32(60)
        flags = try view.u32(64)
        (reserved1, reserved2, reserved3) = (try view.u32(68), try view.u32(72), try view.u32(76))
    }

    /// Whether `address` lies inside this section.
    package func contains(address value: UInt64) -> Bool { value >= address && value - address < size }
}

/// `segment_command_64`: a range of the file mapped at a virtual address, with its sections.
package struct Segment: Equatable, Sendable {
    /// Whether a segment command is mapped: `__PAGEZERO` (no protections, no file bytes) and
    /// empty segments are not.
    @inline(__always)
    package static func isMapped(initialProtection: VMProtection, fileSize: UInt64, vmSize: UInt64) -> Bool {
        !(initialProtection.isEmpty && fileSize == 0) && vmSize > 0
    }

    package static let commandSize = 72
    package let name: String, vmAddress: UInt64, vmSize: UInt64, fileOffset: UInt64, fileSize: UInt64
    package let maxProtection: VMProtection, initialProtection: VMProtection, flags: UInt32
    package let sections: [Section]

    /// Parses a segment command; `view` spans exactly its `cmdsize` bytes. Without
    /// `withSections` the section headers are bounds-checked but not read (`sections` is
    /// empty): what a loader needs to check a mapping plan.
    package init(parsing view: ByteView, withSections: Bool = true) throws(MachOError) {
        try view.check(0, Segment.commandSize)
        name = try view.fixedString(8, 16)
        vmAddress = try view.u64(24)
        vmSize = try view.u64(32)
        fileOffset = try view.u64(40)
        fileSize = try view.u64(48)
        maxProtection = VMProtection(rawValue: Int32(bitPattern: try view.u32(56)))
        initialProtection = VMProtection(rawValue: Int32(bitPattern: try view.u32(60)))
        let sectionCount = try view.u32(64)
        flags = try view.u32(68)
        // The count is bounded by cmdsize before anything is allocated.
        guard UInt64(sectionCount) * UInt64(Section.size) <= UInt64(view.count - Segment.commandSize) else {
            throw MachOError.malformed("segment \(name) claims \(sectionCount) sections, more than its command holds", at: view.absolute(64))
        }
        sections = try (0..<(withSections ? Int(sectionCount) : 0)).map { (index) throws(MachOError) in
            try Section(parsing: try view.slice(Segment.commandSize + index * Section.size, Section.size))
        }
    }

    /// Whether `address` lies inside this segment's VM range.
    package func contains(address value: UInt64) -> Bool { value >= vmAddress && value - vmAddress < vmSize }
}
