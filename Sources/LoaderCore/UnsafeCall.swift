/// Calling into loaded x86_64 code: initializers and `main`. The addresses come from
/// fixed-up images whose `__TEXT` is mapped executable; the caller checked each lies in it.
enum UnsafeCall {
    static func initializer(at address: UInt64) {
        let function = unsafe unsafeBitCast(UInt(address), to: (@convention(c) () -> Void).self)
        function()
    }

    /// A `+load` method, `void f(Class cls, SEL selector)`.
    static func loadMethod(at address: UInt64, cls: UInt64, selector: UInt64) {
        let function = unsafe unsafeBitCast(UInt(address), to: (@convention(c) (UInt, UInt) -> Void).self)
        function(UInt(cls), UInt(selector))
    }

    /// `int main(void)`.
    static func main(at address: UInt64) -> Int32 {
        let function = unsafe unsafeBitCast(UInt(address), to: (@convention(c) () -> Int32).self)
        return function()
    }
}
