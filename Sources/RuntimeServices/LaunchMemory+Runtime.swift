import CThreadLocal
import LaunchMemory

/// The runtime services of one launch: the loader answering its `dlopen`s, with its
/// libSystem's host services table, and its images' thread-local keys. Its memory holds it
/// (``LaunchMemory/runtime``) and releases it before unmapping anything.
final class LaunchRuntimeState: LaunchRuntime {
    var dynamicLoader: (loader: DynamicLoader, table: UInt64?)?
    /// The thread-local keys of this launch's images, and each image's.
    var threadLocalKeys: [Int64] = []
    var threadLocalKeyOfImage: [Int: Int64] = [:]

    /// Ends the table's registration (another launch may map and register its address once it
    /// is unmapped), releases what the loader loaded, and frees the keys.
    func release() {
        if let (loader, table) = dynamicLoader {
            if let table { DynamicLoaderRegistry.unregister(table: table, loader: loader) }
            loader.releaseLoaded()
            dynamicLoader = nil
        }
        for key in threadLocalKeys { dyld3_tlv_key_release(key) }
        threadLocalKeys = []
    }
}

extension LaunchMemory {
    /// This launch's runtime services, made on first use.
    private var runtimeState: LaunchRuntimeState {
        if let state = runtime as? LaunchRuntimeState { return state }
        let state = LaunchRuntimeState()
        runtime = state
        return state
    }

    /// The loader of this launch's `dlopen`s, and its libSystem's host services table.
    package var dynamicLoader: (loader: DynamicLoader, table: UInt64?)? {
        (runtime as? LaunchRuntimeState)?.dynamicLoader
    }

    /// Makes `loader` the one that opens images into this launch and, with `table`, the one
    /// answering the calls of the libSystem whose host services table is there, until release.
    package func attach(_ loader: DynamicLoader, table: UInt64?) {
        let state = runtimeState
        if let (previous, table) = state.dynamicLoader, let table { DynamicLoaderRegistry.unregister(table: table, loader: previous) }
        state.dynamicLoader = (loader, table)
        if let table { DynamicLoaderRegistry.register(loader, table: table) }
    }

    /// Each image's thread-local key. Keys are the process's, so two launches of one app may
    /// get different numbers: `compare` matches them by image.
    package var threadLocalKeyOfImage: [Int: Int64] {
        (runtime as? LaunchRuntimeState)?.threadLocalKeyOfImage ?? [:]
    }

    /// A thread-local key for image `image`'s template of `initialSize` bytes at `address` in
    /// this launch's memory, zeros up to `totalSize`, kept until ``release()``; -1 when none is free.
    func makeThreadLocalKey(image: Int, template address: UInt64, initialSize: UInt64, totalSize: UInt64) -> Int64 {
        let key = dyld3_tlv_key_create(address, initialSize, totalSize)
        if key >= 0 {
            let state = runtimeState
            state.threadLocalKeys.append(key)
            state.threadLocalKeyOfImage[image] = key
        }
        return key
    }
}
