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

#ifdef FIXTURE_TWIN_DLOPEN_PATHS
/*
 * dlopen and its family for the images the manifest's "dlopen" names: the opened image
 * (slot 0) and the dependents it loads (slots 1...), each under the paths that name it
 * (FIXTURE_TWIN_DLOPEN_PATHS, a list of P(slot, "path")). Its images are linked from the
 * start (their initializers held back like every twin image's); the first dlopen of slot 0
 * runs their initializers in the dyld model's order (FIXTURE_TWIN_DLOPEN_INITS), and dlsym
 * and dladdr answer from the manifest's symbols (FIXTURE_TWIN_DLSYMS, a list of
 * S(slot, name)). The modes act as dyld4's dlopen_from and dlsym: RTLD_NOLOAD answers only
 * for a loaded image; RTLD_LOCAL hides the opened image from RTLD_DEFAULT until a dlopen
 * without it; RTLD_FIRST's handle searches its image alone, another handle its image then
 * its dependents; dlopen(NULL) is RTLD_DEFAULT (RTLD_MAIN_ONLY with RTLD_FIRST). A slot's
 * handle is the address of twin_handles[2 * slot], plus 1 for RTLD_FIRST.
 */
#define X(id) extern void fixture_twin_init_##id(void) __attribute__((weak));
FIXTURE_TWIN_DLOPEN_INITS
#undef X
#define S(slot, name) extern char name[] __attribute__((weak));
FIXTURE_TWIN_DLSYMS
#undef S
static const struct {
    int slot;
    const char *name;
    void *address;
} twin_symbols[] = {
#define S(slot, name) {slot, #name, (void *)name},
    FIXTURE_TWIN_DLSYMS
#undef S
};
static const struct {
    int slot;
    const char *path;
} twin_paths[] = {
#define P(slot, path) {slot, path},
    FIXTURE_TWIN_DLOPEN_PATHS
#undef P
};
static int twin_opens[] = {
#define P(slot, path) 0,
    FIXTURE_TWIN_DLOPEN_PATHS
#undef P
};
static char twin_handles[2 * sizeof twin_opens / sizeof twin_opens[0]];
static int twin_opened, twin_hidden;
static char *twin_error;
#define TWIN_MAIN_ONLY ((void *)-5)

static int twin_same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* The slot a handle names (and whether it was opened RTLD_FIRST), or -1. */
static int twin_slot(void *handle, int *first) {
    long offset = (char *)handle - twin_handles;
    if (offset < 0 || offset >= (long)sizeof twin_handles) return -1;
    *first = (int)(offset & 1);
    return (int)(offset / 2);
}

void *dlopen(const char *path, int mode) {
    if (!path) return (mode & RTLD_FIRST) ? TWIN_MAIN_ONLY : RTLD_DEFAULT;
    int slot = -1;
    for (unsigned i = 0; i < sizeof twin_paths / sizeof twin_paths[0]; i++) {
        if (twin_same(path, twin_paths[i].path)) slot = twin_paths[i].slot;
    }
    if (slot < 0 || (!twin_opened && (slot != 0 || (mode & RTLD_NOLOAD)))) {
        twin_error = "image not found";
        return 0;
    }
    if (!twin_opened) {
        twin_opened = 1;
        twin_hidden = (mode & RTLD_LOCAL) != 0;
#define X(id) if (fixture_twin_init_##id) fixture_twin_init_##id();
        FIXTURE_TWIN_DLOPEN_INITS
#undef X
    } else if (slot == 0 && !(mode & RTLD_LOCAL)) {
        twin_hidden = 0;
    }
    twin_opens[slot]++;
    return &twin_handles[2 * slot + ((mode & RTLD_FIRST) ? 1 : 0)];
}

void *dlsym(void *handle, const char *name) {
    int first = 0;
    int slot = twin_slot(handle, &first);
    if (twin_opened && (slot >= 0 || handle == RTLD_DEFAULT)) {
        for (unsigned i = 0; i < sizeof twin_symbols / sizeof twin_symbols[0]; i++) {
            int in = twin_symbols[i].slot;
            int searched = handle == RTLD_DEFAULT ? !(in == 0 && twin_hidden) : (in == slot || (!first && slot == 0));
            if (searched && twin_same(name, twin_symbols[i].name)) return twin_symbols[i].address;
        }
    }
    twin_error = "symbol not found";
    return 0;
}

int dlclose(void *handle) {
    if (handle == RTLD_DEFAULT || handle == TWIN_MAIN_ONLY) return 0;
    int first = 0;
    int slot = twin_slot(handle, &first);
    if (slot < 0 || twin_opens[slot] == 0) {
        twin_error = "not open";
        return -1;
    }
    twin_opens[slot]--;
    return 0;
}

int dladdr(const void *address, Dl_info *info) {
    for (unsigned i = 0; i < sizeof twin_symbols / sizeof twin_symbols[0]; i++) {
        if (twin_opened && twin_symbols[i].address == address) {
            int slot = twin_symbols[i].slot;
            info->dli_fname = "";
            for (unsigned p = sizeof twin_paths / sizeof twin_paths[0]; p-- > 0;) {
                if (twin_paths[p].slot == slot) info->dli_fname = twin_paths[p].path;
            }
            info->dli_fbase = &twin_handles[2 * slot];
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
