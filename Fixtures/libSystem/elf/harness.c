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
