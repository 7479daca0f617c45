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
