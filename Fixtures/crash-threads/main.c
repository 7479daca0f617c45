/*
 * A multi-threaded app that crashes while its pages are being filled (page-in linking's
 * "a crash is a crash" test, Tests/LoaderTests/PageInCrashTests.swift).
 *
 * main starts 16 threads with clone(2) (the fixtures have no libc), each with its stack in
 * this image's own __bss, in the segment that holds 64 pages of rebased pointers; each reads
 * those pointers, in its own order, and has the kernel write into a new zero-fill page of
 * that segment (uname(2)), forever. Once every thread has read its first pointer, main writes through a null
 * pointer: the process must end by SIGSEGV, as it does without page-in. x86_64 Linux only
 * (raw system calls); built by the test with clang and ld64.lld against the fixtures'
 * libSystem.
 *
 * Built with -DROUNDS=N it is the page-in storm instead (tools/pagein-storm, PageInStormTests):
 * no crash; each thread makes N rounds and exits, and main returns 0 once all have, so any
 * other end of the process is a failure of the launch.
 */
#define THREADS 16
#define STACK_SIZE 65536
#define ENTRIES 32768
#define PAGES (ENTRIES / 512)

static int values[1024];

#define P1(n) &values[(n) % 1024]
#define P4(n) P1(n), P1((n) + 1), P1((n) + 2), P1((n) + 3)
#define P16(n) P4(n), P4((n) + 4), P4((n) + 8), P4((n) + 12)
#define P64(n) P16(n), P16((n) + 16), P16((n) + 32), P16((n) + 48)
#define P256(n) P64(n), P64((n) + 64), P64((n) + 128), P64((n) + 192)
#define P1024(n) P256(n), P256((n) + 256), P256((n) + 512), P256((n) + 768)
#define P4096(n) P1024(n), P1024((n) + 1024), P1024((n) + 2048), P1024((n) + 3072)
#define P16384(n) P4096(n), P4096((n) + 4096), P4096((n) + 8192), P4096((n) + 12288)

/* 32768 rebased pointers: 64 pages that receive fixups, in __DATA with the stacks below. */
__attribute__((section("__DATA,__data"))) static int *table[ENTRIES] = { P16384(0), P16384(16384) };
/* The threads' stacks: zero-fill pages of the same segment. */
static char stacks[THREADS][STACK_SIZE] __attribute__((aligned(4096)));
static volatile unsigned long sinks[THREADS];
static volatile int started;
static volatile int finished;
/* Zero-fill pages of the same segment that the kernel writes into (uname(2)), one new page
   per call: a system call touching untouched pages while main crashes. */
#define SCRATCH_PAGES 4096
static char scratch[THREADS][SCRATCH_PAGES][4096] __attribute__((aligned(4096)));

static long uname_into(void *buffer) {
    long result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(63L), "D"(buffer) : "rcx", "r11", "memory");
    return result;
}

static void worker(long index) {
    unsigned long sum = (unsigned long)table[index * 512];
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
#ifdef ROUNDS
    for (long round = 0; round < ROUNDS; round++) {
#else
    for (long round = 0;; round++) {
#endif
        for (long page = 0; page < PAGES; page++) sum += (unsigned long)table[((page * (index * 2 + 1)) % PAGES) * 512];
        uname_into(scratch[index][round % SCRATCH_PAGES]);
        sinks[index] = sum;
    }
    __atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
}

/* clone(2) sharing everything (a thread), its stack at `top`: the child pops `fn` and
   `argument` from it and calls fn; fn never returns (exit(2) if it did). */
static long spawn(void (*fn)(long), long argument, char *top) {
    long *sp = (long *)top;
    *--sp = argument;
    *--sp = (long)fn;
    long result;
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = 0;
    __asm__ volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "pop %%rax\n\t"
        "pop %%rdi\n\t"
        "call *%%rax\n\t"
        "mov $60, %%eax\n\t"
        "xor %%edi, %%edi\n\t"
        "syscall\n\t"
        "1:\n\t"
        : "=a"(result)
        /* clone: CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM */
        : "a"(56L), "D"(0x50f00L), "S"(sp), "d"(0L), "r"(r10), "r"(r8)
        : "rcx", "r11", "memory");
    return result;
}

int main(void) {
    for (long index = 0; index < THREADS; index++) {
        if (spawn(worker, index, stacks[index] + STACK_SIZE) < 0) return 1;
    }
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < THREADS) {}
#ifdef ROUNDS
    /* A thread counts itself finished just before its exit(2): let it get there. */
    while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) < THREADS) {}
#else
    *(volatile int *)16 = 1;
#endif
    return 0;
}
