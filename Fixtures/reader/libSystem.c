/* A stand-in for /usr/lib/libSystem.B.dylib holding only what the fixtures import:
   the lazy-binding helper, the thread-local bootstrap, and one ordinary function. */

void stub_binder(void) __asm__("dyld_stub_binder");
void stub_binder(void) {}

void *tlv_bootstrap(void *descriptor) __asm__("__tlv_bootstrap");
void *tlv_bootstrap(void *descriptor) { return descriptor; }

int system_status;
void system_exit(int code) { system_status = code; }
