import LaunchPlan

/// A dlopen closure (dyld3's): what a `dlopen` of one path after the launch loads, resolved at
/// install time (`dyld3 install APP --dlopen PATH`): no path search, no symbol lookup.
///
/// Encoded (docs/closure-format.md): the path as requested (string), the image it opens
/// (string), then a closure body as a blob whose images are the launch's, in order, then the
/// ones the `dlopen` adds, which alone carry fixups and initializers. It is decoded and
/// checked against the launch's closure when a `dlopen` uses it (``closure(within:path:)``).
package struct ClosureDlopen: Equatable, Sendable {
    /// The path as the app passes it to `dlopen` (or as given to `--dlopen`).
    package var requested: String
    /// The file it opens (after `@executable_path`, `@rpath` and the root).
    package var resolvedPath: String
    /// The image it opens, in the dlopen closure's image list.
    package var opened: Int
    /// The dlopen closure's body (``LaunchClosure/encodedBody()``).
    package var body: [UInt8]

    package init(requested: String, resolvedPath: String, opened: Int, body: [UInt8]) {
        (self.requested, self.resolvedPath, self.opened, self.body) = (requested, resolvedPath, opened, body)
    }

    /// Fewest bytes one record takes: two empty strings, an index, an empty blob.
    static let minimumEncodedSize = 4

    init(parsing r: inout ClosureReader) throws(ClosureError) {
        requested = try r.string()
        resolvedPath = try r.string()
        opened = try r.int("dlopen opened image")
        body = Array(try r.blob())
    }

    func encode(into w: inout ClosureWriter) {
        w.string(requested)
        w.string(resolvedPath)
        w.uleb(opened)
        w.blob(body[...])
    }

    /// The dlopen closure, checked against `launch` (read from `path`): the same binding, the
    /// launch's images first (same paths, identities and plans), then at least one image, the
    /// opened one among those; only they have fixups or initializers, and nothing the launch
    /// alone does (entry point, Objective-C, thread-local records, dlopen closures).
    package func closure(within launch: LaunchClosure, path: String) throws(ClosureError) -> LaunchClosure {
        let nested = try LaunchClosure(parsingBody: body, path: path)
        let first = launch.images.count
        func refuse(_ what: String) -> ClosureError {
            .corrupt(path: path, offset: 0, what: "dlopen closure for \(requested): \(what)")
        }
        guard nested.binding == launch.binding, nested.contentOnlyIdentity == launch.contentOnlyIdentity else {
            throw refuse("its binding is not the launch's")
        }
        guard nested.images.count > first, Array(nested.images[..<first].map(\.path)) == launch.images.map(\.path) else {
            throw refuse("its first images are not the launch's")
        }
        for index in 0..<first where nested.images[index].identity != launch.images[index].identity || nested.images[index].plan != launch.images[index].plan {
            throw refuse("image \(index) (\(launch.images[index].path)) is not the launch's")
        }
        guard opened >= first, opened < nested.images.count, nested.images[opened].path == resolvedPath else {
            throw refuse("the opened image \(opened) is not one it adds, or not \(resolvedPath)")
        }
        for index in 0..<first where nested.images[index].rebaseCount + nested.images[index].bindCount > 0 || !nested.images[index].initializers.isEmpty {
            throw refuse("it fixes up or initializes the launch's image \(index) (\(launch.images[index].path))")
        }
        guard nested.initializerOrder.allSatisfy({ $0 >= first }) else { throw refuse("its initializer order names a launch image") }
        guard nested.entryOffset == nil, nested.objc == .none, nested.threadLocals == .none, nested.dlopens.isEmpty else {
            throw refuse("it has an entry point, Objective-C, thread-local or dlopen records")
        }
        return nested
    }
}

/// What a `dlopen` of a path needs after the images loaded so far: nothing (the path names
/// one of them, `loaded`), or the dlopen closure that adds its images: encoded (`closure`, as
/// `install --dlopen` writes it), or built in process and not yet encoded (`built`).
package enum DlopenResolution: Sendable {
    case loaded(path: String)
    case closure(ClosureDlopen)
    case built(BuiltDlopen)

    /// The encoded dlopen closure, when there is one (a `built` one encoded now).
    package func encoded() throws(LoadError) -> ClosureDlopen? {
        switch self {
        case .loaded: nil
        case let .closure(record): record
        case let .built(built): try built.encode()
        }
    }
}

/// A dlopen closure built in process, as dyld3 built one for a path it had none for: resolved,
/// not encoded. `dlopen` writes its fixups as resolved (the same resolution as dyld2's, nothing
/// encoded before the images run); ``encode`` makes the ``ClosureDlopen`` only when the launch
/// keeps it for the next one.
package struct BuiltDlopen: Sendable {
    package var requested: String
    /// The file it opens.
    package var resolvedPath: String
    /// The image it opens, in ``images``.
    package var opened: Int
    /// The images loaded before, then the ones it adds: their records without fixup runs.
    package var images: [ClosureImage]
    /// Where the added images start in ``images``.
    package var firstAdded: Int
    package var initializerOrder: [Int]
    /// Per added image, in order: its fixups.
    package var fixups: [[ResolvedFixup]]
    /// The encoded dlopen closure (runs, bind targets, body).
    package var encode: @Sendable () throws(LoadError) -> ClosureDlopen
    /// What the builder keeps for its next build in this launch (its graph of the images
    /// loaded so far, as dyld2 keeps its own), opaque here.
    package var builderState: (any Sendable)?

    package init(requested: String, resolvedPath: String, opened: Int, images: [ClosureImage], firstAdded: Int, initializerOrder: [Int],
                 fixups: [[ResolvedFixup]], builderState: (any Sendable)?, encode: @escaping @Sendable () throws(LoadError) -> ClosureDlopen) {
        (self.builderState, self.requested, self.resolvedPath, self.opened, self.images) = (builderState, requested, resolvedPath, opened, images)
        (self.firstAdded, self.initializerOrder, self.fixups, self.encode) = (firstAdded, initializerOrder, fixups, encode)
    }
}
