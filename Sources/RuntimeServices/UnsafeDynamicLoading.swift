import CHostServices
import Foundation
import Glibc
import LaunchPlan
import Synchronization
import MachOReader

/// The loaders of the launches whose code may call `dlopen` and its family, by the address of
/// their libSystem's host services table, and the C entry points `CHostServices` calls. A call
/// finds its loader under the registry's lock, then calls it under the launch's recursive lock
/// (an initializer `dlopen` runs may call `dlopen`). `dladdr`'s names live until the launch is
/// unregistered; `dlerror`'s message until the next error.
package enum DynamicLoaderRegistry {
    /// One registered launch: its loader, and the C strings it handed out (as addresses).
    private final class Entry: Sendable {
        nonisolated(unsafe) let loader: DynamicLoader
        /// Serializes the launch's calls into its loader, as dyld's loaders lock does.
        let calls = NSRecursiveLock()
        /// The names made so far, and the last error's message with whether `dlerror` has yet to report it.
        private let state = Mutex<(strings: [String: UInt], lastError: UInt, pending: Bool)>(([:], 0, false))

        init(loader: DynamicLoader) { unsafe self.loader = loader }

        func serialized<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
            calls.lock()
            defer { calls.unlock() }
            return try body()
        }

        /// A C string for `text`, made once and kept until ``free()``.
        func cString(_ text: String) -> UnsafePointer<CChar> {
            let address = state.withLock { state in
                if let made = state.strings[text] { return made }
                let made = UInt(bitPattern: unsafe strdup(text))
                state.strings[text] = made
                return made
            }
            return unsafe UnsafePointer(bitPattern: address)!
        }

        /// Keeps `message` for `dlerror`, freeing the previous one (not kept one per call).
        func fail(_ message: String) {
            let address = UInt(bitPattern: unsafe strdup(message))
            let previous = state.withLock { state in
                defer { state.lastError = address; state.pending = true }
                return state.lastError
            }
            unsafe Glibc.free(UnsafeMutableRawPointer(bitPattern: previous))
        }

        /// `dlerror`: the last error since the last call, then nil.
        func takeError() -> UnsafePointer<CChar>? {
            let address = state.withLock { state -> UInt in
                defer { state.pending = false }
                return state.pending ? state.lastError : 0
            }
            return unsafe UnsafePointer(bitPattern: address)
        }

        func free() {
            let strings = state.withLock { state in
                defer { state.strings = [:]; state.lastError = 0; state.pending = false }
                return Array(state.strings.values) + [state.lastError]
            }
            for address in strings { unsafe Glibc.free(UnsafeMutableRawPointer(bitPattern: address)) }
        }
    }

    /// By table address: a few at most (one per launch in the process), searched in order.
    private static let entries = Mutex<[(table: UInt64, entry: Entry)]>([])

    /// Makes `loader` answer the calls of the libSystem whose host services table is at `table`.
    package static func register(_ loader: DynamicLoader, table: UInt64) {
        installHandlers
        let entry = Entry(loader: loader)
        entries.withLock { entries in
            entries.removeAll { $0.table == table }
            entries.append((table, entry))
        }
    }

    /// Ends `loader`'s registration at `table`; another launch's made there since stays.
    package static func unregister(table: UInt64, loader: DynamicLoader) {
        let entry = entries.withLock { entries -> Entry? in
            guard let index = entries.firstIndex(where: { $0.table == table }), unsafe entries[index].entry.loader === loader else { return nil }
            return entries.remove(at: index).entry
        }
        entry?.free()
    }

    private static func entry(_ table: UInt64) -> Entry? { entries.withLock { $0.first { $0.table == table }?.entry } }

    /// `body` with the loader of the launch at `table`, under its lock; on an error, `failed`,
    /// and "`call`: error" kept for `dlerror`.
    private static func calling<T>(_ table: UInt64, _ call: @autoclosure () -> String, failed: T,
                                   _ body: (DynamicLoader) throws(LoadError) -> T) -> T {
        guard let entry = entry(table) else { return failed }
        do throws(LoadError) {
            return try entry.serialized { () throws(LoadError) in try body(unsafe entry.loader) }
        } catch {
            entry.fail("\(call()): \(error)")
            return failed
        }
    }

    private static func open(_ table: UInt64, _ path: UnsafePointer<CChar>?, _ mode: Int32) -> UInt64 {
        // dlopen(NULL): dyld4's magic handles, the same in both paths (``DynamicHandle/defaultSearch``,
        // or ``DynamicHandle/mainOnly`` with `RTLD_FIRST`); nothing is loaded.
        guard let path = unsafe path else {
            return DynamicOpenMode(rawValue: mode).contains(.first) ? DynamicHandle.mainOnly : DynamicHandle.defaultSearch
        }
        let text = unsafe String(cString: path)
        return calling(table, "dlopen(\(text), \(hex(mode)))", failed: 0) { (loader) throws(LoadError) in
            try loader.open(text, mode: mode)
        }
    }

    private static func symbol(_ table: UInt64, _ handle: UInt64, _ name: UnsafePointer<CChar>?) -> UInt64 {
        guard let name = unsafe name else { return 0 }
        let text = unsafe String(cString: name)
        return calling(table, "dlsym(\(hex(handle)), \(text))", failed: 0) { (loader) throws(LoadError) in
            try loader.symbol(text, handle: handle)
        }
    }

    private static func close(_ table: UInt64, _ handle: UInt64) -> Int32 {
        // dlopen(NULL)'s handles close silently, as dyld4's do.
        if handle == DynamicHandle.defaultSearch || handle == DynamicHandle.mainOnly { return 0 }
        return calling(table, "dlclose(\(hex(handle)))", failed: -1) { (loader) throws(LoadError) in
            try loader.close(handle)
            return 0
        }
    }

    private static func address(_ table: UInt64, _ address: UInt64, _ info: UnsafeMutablePointer<dyld3_dl_info>?) -> Int32 {
        guard let entry = entry(table), let info = unsafe info else { return 0 }
        guard let found = entry.serialized({ unsafe entry.loader.describe(address) }) else {
            entry.fail("dladdr(\(hex(address))): not in any loaded image")
            return 0
        }
        let fname = unsafe entry.cString(found.path)
        let sname = unsafe found.symbol.map { unsafe entry.cString($0) }
        unsafe info.pointee = dyld3_dl_info(
            fname: fname, fbase: UnsafeMutableRawPointer(bitPattern: UInt(found.base)),
            sname: sname, saddr: UnsafeMutableRawPointer(bitPattern: UInt(found.symbolAddress)))
        return 1
    }

    private static func error(_ table: UInt64) -> UnsafePointer<CChar>? {
        unsafe entry(table)?.takeError()
    }

    /// Sets `CHostServices`' handlers, once per process.
    private static let installHandlers: Void = {
        let handlers = unsafe dyld3_dl_handlers(
            open: { unsafe DynamicLoaderRegistry.open($0, $1, $2) },
            symbol: { unsafe DynamicLoaderRegistry.symbol($0, $1, $2) },
            close: { DynamicLoaderRegistry.close($0, $1) },
            address: { unsafe DynamicLoaderRegistry.address($0, $1, $2) },
            error: { unsafe DynamicLoaderRegistry.error($0) })
        dyld3_dl_set_handlers(handlers)
    }()
}
