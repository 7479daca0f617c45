/*
 * Linked into every image of an ELF twin (x86_64 Linux only).
 *
 * The twin's objects have their .init_array renamed to fixture_init, so the host's
 * ld.so runs no fixture initializer. Instead the harness calls each image's
 * fixture_twin_init_<id> in the order dyld would (computed by the builder's dyld
 * model), so initializers observe the same init log as under a Mach-O loader.
 */
#define TWIN_NAME2(id) fixture_twin_init_##id
#define TWIN_NAME(id) TWIN_NAME2(id)

typedef void (*twin_initializer)(void);
extern const twin_initializer __start_fixture_init[] __attribute__((weak, visibility("hidden")));
extern const twin_initializer __stop_fixture_init[] __attribute__((weak, visibility("hidden")));

void TWIN_NAME(FIXTURE_IMAGE_ID)(void) {
    for (const twin_initializer *p = __start_fixture_init; p < __stop_fixture_init; p++) (*p)();
}
