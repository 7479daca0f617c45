import LaunchPlan

/// What a stub slice holds so that the loader's Objective-C step runs under a stub root (the
/// stub-root marker keeps any of it from running):
/// - every class a stub exports (`_OBJC_CLASS_$_X` or `_OBJC_METACLASS_$_X`) is a root
///   `class_t` and its root metaclass (isa to itself, superclass the class, as objc4 lays out
///   a root class), in `__objc_classlist` beside an `__objc_imageinfo`, so categories attach;
/// - the runtime's stub (``runtimeInstallName``) carries `__DATA,__objc_fxtables` (as
///   `Fixtures/libSystem/objc/objc-runtime.h` describes, tables zero-filled), its functions
///   trap if called, and its data symbols (`__objc_empty_cache`, `_OBJC_EHTYPE_$_X`, ...) are zeroed.
enum StubObjC {
    /// The runtime's install name on macOS.
    static let runtimeInstallName = "/usr/lib/libobjc.A.dylib"
    static let classPrefix = "_OBJC_CLASS_$_"
    static let metaclassPrefix = "_OBJC_METACLASS_$_"
    /// Capacities of the runtime's tables (as the project's libobjc has them).
    static let classCapacity = 8192
    static let categoryCapacity = 8192
    /// Reserved slots of the runtime's hash tables: selectors, class names, protocols.
    static let hashTableSlots = [("selector", 65536), ("class_name", 16384), ("protocol", 8192)]
    /// `class_ro_t` flags (objc4 `RO_META`, `RO_ROOT`).
    static let roMeta = 0x1, roRoot = 0x2

    /// Names of the runtime's data symbols (everything else the runtime exports is a function).
    static func isRuntimeData(_ name: String) -> Bool {
        name.hasPrefix(classPrefix) || name.hasPrefix(metaclassPrefix) || name.hasPrefix("_OBJC_EHTYPE_")
            || name.hasPrefix("_OBJC_IVAR_$_") || name == "__objc_empty_cache" || name == "__objc_empty_vtable"
            || name.hasPrefix("_objc_debug_")
    }

    /// The class names a slice's exports stand for, sorted, each once.
    static func classNames(in exports: [StubExport]) -> [String] {
        let names = exports.flatMap { export in
            [classPrefix, metaclassPrefix].filter { export.name.hasPrefix($0) }.map { String(export.name.dropFirst($0.count)) }
        }
        return Set(names).filter { !$0.isEmpty }.sorted()
    }

    /// The assembly for the exports of `slice`, with class objects and, for the runtime,
    /// its tables and trapping functions. Exports that are neither classes nor runtime
    /// functions are 8-byte zero data in the marker section, as in every stub.
    static func lines(for slice: StubSlice, isRuntime: Bool) throws(CommandFailure) -> [String] {
        // The runtime always has the class its canonical protocols' isa points to.
        let classes = classNames(in: slice.exports + (isRuntime ? [StubExport(name: classPrefix + "Protocol", isWeakDefinition: false)] : []))
        let exported = Dictionary(uniqueKeysWithValues: slice.exports.map { ($0.name, $0) })
        var data: [String] = [], code: [String] = []
        func declare(_ name: String, into lines: inout [String]) throws(CommandFailure) -> String {
            let label = try StubAssembly.quoted(name)
            if let export = exported[name] {
                lines.append("\t.globl \(label)")
                if export.isWeakDefinition { lines.append("\t.weak_definition \(label)") }
            }
            return label
        }
        for export in slice.exports where !export.name.hasPrefix(classPrefix) && !export.name.hasPrefix(metaclassPrefix) {
            if isRuntime, !isRuntimeData(export.name) {
                let label = try declare(export.name, into: &code)
                code += ["\t.p2align 2", "\(label):", StubAssembly.trap(arch: slice.arch)]
            } else {
                // objc_typeinfo (vtable, name, class) is three words; every other datum one.
                let label = try declare(export.name, into: &data)
                data += ["\(label):", export.name.hasPrefix("_OBJC_EHTYPE_") ? "\t.quad 0, 0, 0" : "\t.quad 0"]
            }
        }
        var lines = data
        guard !classes.isEmpty || isRuntime else { return lines }
        var objects: [String] = [], readOnly: [String] = [], names: [String] = [], list: [String] = []
        for (index, name) in classes.enumerated() {
            var header: [String] = []
            let cls = try declare(classPrefix + name, into: &header)
            let meta = try declare(metaclassPrefix + name, into: &header)
            let nameLabel = try StubAssembly.quoted("l_stub_objc_name_\(index)")
            let ro = try StubAssembly.quoted("l_stub_objc_ro_\(index)")
            let metaRO = try StubAssembly.quoted("l_stub_objc_metaro_\(index)")
            objects += header + [
                "\t.p2align 3",
                "\(cls):", "\t.quad \(meta)", "\t.quad 0", "\t.quad 0", "\t.quad 0", "\t.quad \(ro)",
                "\(meta):", "\t.quad \(meta)", "\t.quad \(cls)", "\t.quad 0", "\t.quad 0", "\t.quad \(metaRO)",
            ]
            // class_ro_t: flags, instanceStart, instanceSize, reserved, ivarLayout, name,
            // baseMethods, baseProtocols, ivars, weakIvarLayout, baseProperties.
            for (label, flags, size) in [(ro, roRoot, 8), (metaRO, roRoot | roMeta, 40)] {
                readOnly += ["\t.p2align 3", "\(label):", "\t.long \(flags), \(size), \(size), 0",
                             "\t.quad 0", "\t.quad \(nameLabel)", "\t.quad 0, 0, 0, 0, 0"]
            }
            names += ["\(nameLabel):", "\t.asciz \(try StubAssembly.quoted(name))"]
            list.append("\t.quad \(cls)")
        }
        if !classes.isEmpty {
            lines += ["\t.section __DATA,__objc_data"] + objects
            lines += ["\t.section __DATA,__objc_const"] + readOnly
            lines += ["\t.section __TEXT,__objc_classname,cstring_literals"] + names
            lines += ["\t.section __DATA,__objc_classlist,regular,no_dead_strip", "\t.p2align 3"] + list
        }
        // objc_image_info: version 0, flags 0x40 (what clang emits for current targets).
        lines += ["\t.section __DATA,__objc_imageinfo,regular,no_dead_strip", "\t.p2align 2", "\t.long 0, 64"]
        if isRuntime {
            // The tables' magic ("OBJCTAB2"), capacities and entry arrays.
            lines += ["\t.section __DATA,__objc_fxtables", "\t.p2align 3", "l_stub_objc_tables:", "\t.quad 0x32424154434a424f",
                      "\t.quad \(classCapacity)", "\t.quad \(categoryCapacity)",
                      "\t.quad l_stub_objc_class_entries", "\t.quad l_stub_objc_category_entries", "\t.quad 0, 0"]
            // Each hash table: reserved slots, slot array, mask and count (the loader's).
            for (name, slots) in hashTableSlots { lines += ["\t.quad \(slots)", "\t.quad l_stub_objc_\(name)_slots", "\t.quad 0, 0"] }
            lines += [
                // class, metaclass, name, first category, category count: 40 bytes each.
                "\t.zerofill __DATA,__bss,l_stub_objc_class_entries,\(classCapacity * 40),3",
                "\t.zerofill __DATA,__bss,l_stub_objc_category_entries,\(categoryCapacity * 8),3",
            ]
            for (name, slots) in hashTableSlots { lines.append("\t.zerofill __DATA,__bss,l_stub_objc_\(name)_slots,\(slots * 8),3") }
        }
        if !code.isEmpty { lines += ["\t.text"] + code }
        return lines
    }
}
