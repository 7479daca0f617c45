/*
 * Entry point of the ELF twins (x86_64 Linux only; never part of a Mach-O fixture).
 *
 * The twin's executable runs under the host's ld.so without any libc: this file
 * provides _start, runs the images' initializers in the order given by
 * FIXTURE_TWIN_INITS (a list of X(id), dyld's order, see twin_init.c), calls the
 * fixture's main, prints "result N" and "init ID..."
 * (the init-order log kept by our libSystem) on stdout, and exits with status 0.
 */
#include "fixture.h"

extern int main(void);

#define X(id) extern void fixture_twin_init_##id(void) __attribute__((weak));
FIXTURE_TWIN_INITS
#undef X

#ifdef FIXTURE_TWIN_DLOPEN_PATH
/*
 * dlopen and its family for the one path the manifest's "dlopen" names. Its images are
 * linked from the start (their initializers held back like every twin image's); the first
 * dlopen of the path runs their initializers in the dyld model's order
 * (FIXTURE_TWIN_DLOPEN_INITS), and dlsym and dladdr answer from the manifest's symbols
 * (FIXTURE_TWIN_DLSYMS, a list of S(name)). The handle is the address of twin_handle.
 */
#define X(id) extern void fixture_twin_init_##id(void) __attribute__((weak));
FIXTURE_TWIN_DLOPEN_INITS
#undef X
#define S(name) extern char name[] __attribute__((weak));
FIXTURE_TWIN_DLSYMS
#undef S
static const struct {
    const char *name;
    void *address;
} twin_symbols[] = {
#define S(name) {#name, (void *)name},
    FIXTURE_TWIN_DLSYMS
#undef S
};
static char twin_handle;
static int twin_opened, twin_opens;
static char *twin_error;

static int twin_same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

void *dlopen(const char *path, int mode) {
    (void)mode;
    if (!path || !twin_same(path, FIXTURE_TWIN_DLOPEN_PATH)) {
        twin_error = "image not found";
        return 0;
    }
    if (!twin_opened) {
        twin_opened = 1;
#define X(id) if (fixture_twin_init_##id) fixture_twin_init_##id();
        FIXTURE_TWIN_DLOPEN_INITS
#undef X
    }
    twin_opens++;
    return &twin_handle;
}

void *dlsym(void *handle, const char *name) {
    if (twin_opened && (handle == &twin_handle || handle == RTLD_DEFAULT)) {
        for (unsigned i = 0; i < sizeof twin_symbols / sizeof twin_symbols[0]; i++) {
            if (twin_same(name, twin_symbols[i].name)) return twin_symbols[i].address;
        }
    }
    twin_error = "symbol not found";
    return 0;
}

int dlclose(void *handle) {
    if (handle != &twin_handle || twin_opens == 0) {
        twin_error = "not open";
        return -1;
    }
    twin_opens--;
    return 0;
}

int dladdr(const void *address, Dl_info *info) {
    for (unsigned i = 0; i < sizeof twin_symbols / sizeof twin_symbols[0]; i++) {
        if (twin_opened && twin_symbols[i].address == address) {
            info->dli_fname = FIXTURE_TWIN_DLOPEN_PATH;
            info->dli_fbase = &twin_handle;
            info->dli_sname = twin_symbols[i].name;
            info->dli_saddr = twin_symbols[i].address;
            return 1;
        }
    }
    twin_error = "not in any image";
    return 0;
}

char *dlerror(void) {
    char *error = twin_error;
    twin_error = 0;
    return error;
}
#endif

static long twin_write(const char *bytes, long count) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(1L), "D"(1L), "S"(bytes), "d"(count) : "rcx", "r11", "memory");
    return ret;
}

static void twin_exit(int status) {
    __asm__ volatile("syscall" : : "a"(231L), "D"((long)status) : "rcx", "r11", "memory");
    for (;;) {
    }
}

static char out[8 * FIXTURE_INIT_LOG_CAPACITY + 64];
static int used;

static void put_text(const char *s) {
    while (*s && used < (int)sizeof(out)) out[used++] = *s++;
}

static void put_number(long value) {
    char digits[24];
    int n = 0;
    unsigned long magnitude = value < 0 ? 0UL - (unsigned long)value : (unsigned long)value;
    if (value < 0) put_text("-");
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    while (n && used < (int)sizeof(out)) out[used++] = digits[--n];
}

void twin_start(void) {
#define X(id) if (fixture_twin_init_##id) fixture_twin_init_##id();
    FIXTURE_TWIN_INITS
#undef X
    int result = main();
    put_text("result ");
    put_number(result);
    put_text("\ninit");
    for (int i = 0; i < fixture_init_count && i < FIXTURE_INIT_LOG_CAPACITY; i++) {
        put_text(" ");
        put_number(fixture_init_log[i]);
    }
    put_text("\n");
    twin_write(out, used);
    twin_exit(0);
}

__asm__(".text\n.globl _start\n_start:\n  xor %ebp, %ebp\n  and $-16, %rsp\n  call twin_start\n  hlt\n");
