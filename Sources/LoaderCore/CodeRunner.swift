import LaunchPlan
import LaunchMemory
import MachOReader

/// Runs loaded code: initializers in order, then `main`. Only when the images are for the
/// host's architecture; every address is checked to lie in an executable segment first.
package enum CodeRunner {
    /// The architecture whose code can run in this process.
    package static var hostArchitecture: String {
        #if arch(x86_64)
        "x86_64"
        #elseif arch(arm64)
        "arm64"
        #else
        "unknown"
        #endif
    }

    /// An initializer or entry point, and its image.
    package struct Function: Sendable {
        package let image: Int
        package let address: UInt64
        /// For a `+load` method: its class and selector arguments; nil for an initializer.
        package let loadArguments: (cls: UInt64, selector: UInt64)?
        package init(image: Int, address: UInt64, loadArguments: (cls: UInt64, selector: UInt64)? = nil) {
            (self.image, self.address, self.loadArguments) = (image, address, loadArguments)
        }
    }

    package static func runInitializers(_ functions: [Function], in memory: LaunchMemory) throws(LoadError) {
        for function in functions {
            try check(function, memory)
            if let arguments = function.loadArguments {
                UnsafeCall.loadMethod(at: function.address, cls: arguments.cls, selector: arguments.selector)
            } else {
                UnsafeCall.initializer(at: function.address)
            }
        }
    }

    package static func runMain(_ function: Function, in memory: LaunchMemory) throws(LoadError) -> Int32 {
        try check(function, memory)
        return UnsafeCall.main(at: function.address)
    }

    private static func check(_ function: Function, _ memory: LaunchMemory) throws(LoadError) {
        guard memory.isExecutable(function.address, image: function.image) else {
            throw .mapping(image: memory.images[function.image].plan.path,
                           reason: "code address \(hex(function.address)) is not in an executable segment")
        }
    }
}
