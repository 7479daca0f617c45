/*
 * Shared declarations for the fixture apps (see docs/fixtures.md).
 *
 * Everything here is freestanding: no libc headers, no syscalls. The same
 * sources build as Mach-O (x86_64-apple-macos11, arm64-apple-ios14) and as
 * the x86_64 Linux ELF twin that re-derives the expected results.
 */
#ifndef FIXTURE_H
#define FIXTURE_H

/* Mach-O weak import (`weak_import`); the ELF twin mirrors it with a weak undefined symbol. */
#if defined(__MACH__)
#define FIXTURE_WEAK_IMPORT __attribute__((weak_import))
#else
#define FIXTURE_WEAK_IMPORT __attribute__((weak))
#endif

/* A weak definition, coalesced across the images that have weak definitions (a non-weak one among them wins, else the first weak one in load order). */
#define FIXTURE_WEAK_DEF __attribute__((weak))

/* Provided by our libSystem.B.dylib. */
#define FIXTURE_INIT_LOG_CAPACITY 4096
extern int fixture_init_log[FIXTURE_INIT_LOG_CAPACITY];
extern int fixture_init_count;
void fixture_record_init(int id);

/*
 * FIXTURE_IMAGE_ID is passed by the builder: the 1-based position of the image in
 * its manifest's "images" list. FIXTURE_INITIALIZER() defines a constructor that
 * appends it to the init log.
 */
#define FIXTURE_INITIALIZER() \
    __attribute__((constructor)) static void fixture_initializer(void) { fixture_record_init(FIXTURE_IMAGE_ID); }

/*
 * Threads of the process the images run in. Under a Mach-O loader, our libSystem calls the
 * loader's host services (real threads). In the ELF twin, a started thread runs to its end
 * at once under its own id (fixture_twin_thread, 0 for the main thread), so a twin can keep
 * thread-local state explicitly, one slot per id; results must not depend on interleaving.
 */
long fixture_thread_start(int (*function)(int), int argument);
int fixture_thread_join(long thread);
#define FIXTURE_TWIN_THREADS 64
#if !defined(__MACH__)
extern int fixture_twin_thread;
#endif

/*
 * dlopen and its family, as Darwin declares them. Under a Mach-O loader our libSystem calls
 * the loader's host services; the ELF twin's harness models them for the one path its
 * manifest's "dlopen" names (elf/harness.c).
 */
#define RTLD_LAZY 0x1
#define RTLD_NOW 0x2
#define RTLD_LOCAL 0x4
#define RTLD_GLOBAL 0x8
#define RTLD_NOLOAD 0x10
#define RTLD_NODELETE 0x80
#define RTLD_FIRST 0x100
#define RTLD_DEFAULT ((void *)-2)
#define RTLD_MAIN_ONLY ((void *)-5)
typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} Dl_info;
void *dlopen(const char *path, int mode);
void *dlsym(void *handle, const char *name);
int dlclose(void *handle);
int dladdr(const void *address, Dl_info *info);
char *dlerror(void);

/* The checksum step: multiply-add on 32-bit unsigned integers (wraps). */
static inline unsigned fixture_mix(unsigned h, unsigned v) { return h * 16777619u + v; }

/* Folds the init log (count, then each id in order) into a checksum. */
static inline unsigned fixture_mix_init_log(unsigned h) {
    h = fixture_mix(h, (unsigned)fixture_init_count);
    for (int i = 0; i < fixture_init_count && i < FIXTURE_INIT_LOG_CAPACITY; i++) h = fixture_mix(h, (unsigned)fixture_init_log[i]);
    return h;
}

#endif
