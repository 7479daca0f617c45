/*
 * The fixtures' own libSystem.B.dylib (install name /usr/lib/libSystem.B.dylib).
 * No host dependency: it provides only what the fixture images import.
 */
#include "fixture.h"

typedef __SIZE_TYPE__ size_t;

/*
 * ld64's lazy-binding helper. Fixture loaders bind every lazy pointer at launch,
 * so reaching it means a lazy pointer was left unbound: trap.
 */
void fixture_stub_binder(void) __asm__("dyld_stub_binder");
void fixture_stub_binder(void) { __builtin_trap(); }

#if defined(__MACH__)
/*
 * The linker binds every thread-local descriptor's thunk here; the loader points each one
 * at its own thunk before any code runs. Reaching it means a descriptor was left alone: trap.
 */
void fixture_tlv_bootstrap(void) __asm__("__tlv_bootstrap");
void fixture_tlv_bootstrap(void) { __builtin_trap(); }

/* Filled by the loader (the layout CHostServices' hostservices.h gives: version 2). The dl
 * functions take the table's address first: it names the launch that mapped this image. */
struct dyld3_host_services {
    unsigned long version;
    long (*thread_start)(int (*)(int), int);
    int (*thread_join)(long);
    void *(*dlopen)(const void *table, const char *path, int mode);
    void *(*dlsym)(const void *table, void *handle, const char *name);
    int (*dlclose)(const void *table, void *handle);
    int (*dladdr)(const void *table, const void *address, Dl_info *info);
    char *(*dlerror)(const void *table);
};
struct dyld3_host_services dyld3_host_services;

/* Each call traps unless the loader filled the table (an unset table is a loader bug). */
#define HOST(member) (dyld3_host_services.version == 2 && dyld3_host_services.member ? dyld3_host_services.member : (__builtin_trap(), dyld3_host_services.member))

long fixture_thread_start(int (*function)(int), int argument) { return HOST(thread_start)(function, argument); }
int fixture_thread_join(long thread) { return HOST(thread_join)(thread); }
void *dlopen(const char *path, int mode) { return HOST(dlopen)(&dyld3_host_services, path, mode); }
void *dlsym(void *handle, const char *name) { return HOST(dlsym)(&dyld3_host_services, handle, name); }
int dlclose(void *handle) { return HOST(dlclose)(&dyld3_host_services, handle); }
int dladdr(const void *address, Dl_info *info) { return HOST(dladdr)(&dyld3_host_services, address, info); }
char *dlerror(void) { return HOST(dlerror)(&dyld3_host_services); }
#else
/* The ELF twin: each "thread" runs to its end when started, under its own id. */
int fixture_twin_thread;
static int twin_results[FIXTURE_TWIN_THREADS];
static int twin_next_thread = 1;

long fixture_thread_start(int (*function)(int), int argument) {
    int id = twin_next_thread++;
    if (id >= FIXTURE_TWIN_THREADS) __builtin_trap();
    int saved = fixture_twin_thread;
    fixture_twin_thread = id;
    twin_results[id] = function(argument);
    fixture_twin_thread = saved;
    return id;
}

int fixture_thread_join(long thread) { return twin_results[thread]; }
#endif

/* The initializer order log: each image's constructor appends its id. */
int fixture_init_log[FIXTURE_INIT_LOG_CAPACITY];
int fixture_init_count;

void fixture_record_init(int id) {
    if (fixture_init_count < FIXTURE_INIT_LOG_CAPACITY) fixture_init_log[fixture_init_count] = id;
    fixture_init_count++;
}

/* What the compiler may emit calls to even with -fno-builtin. */
void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
        while (n--) *d++ = *s++;
    } else {
        while (n--) d[n] = s[n];
    }
    return dst;
}
