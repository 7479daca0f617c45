// See include/pagein.h.
#define _GNU_SOURCE
#include "pagein.h"

#include <errno.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// A system call made directly: its result, or -errno. errno is a thread-local, and a thread
/// made by a raw clone(2) shares its creator's: the fault path never reads or writes it.
static long direct_syscall(long number, long a, long b, long c, long d) {
#if defined(__x86_64__)
    long result;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return result;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = number;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
#else
    // Elsewhere through libc, errno kept as it was (racing any thread that shares it).
    int saved = errno;
    long result = syscall(number, a, b, c, d);
    if (result < 0) result = -errno;
    errno = saved;
    return result;
#endif
}

struct region {
    _Atomic uint64_t start;
    _Atomic uint64_t end;
    _Atomic(void *) context;
    _Atomic(dyld3_pagein_fill) fill;
    /// Fills in progress for this slot (a deactivation waits for 0).
    _Atomic int users;
    /// Taken by an activation (set before the fields, cleared after deactivation).
    _Atomic int claimed;
};

static struct region regions[DYLD3_PAGEIN_REGIONS];
/// One past the highest slot ever claimed: the handler scans no further.
static _Atomic int slotsInUse;
static struct sigaction previous;
static pthread_once_t installOnce = PTHREAD_ONCE_INIT;
static int installError;

/// Hands the signal to the handler installed before ours. A fault with a default or
/// ignored action: restore the default and return, so the instruction faults again and
/// the process ends by SIGBUS as it would without us (a SIGBUS sent by kill is raised again).
static void chain(int signal, siginfo_t *info, void *context) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(signal, info, context);
        return;
    }
    if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigaction(signal, &fallback, 0);
        if (info->si_code <= 0) raise(signal);
        return;
    }
    previous.sa_handler(signal);
}

/// Ends the process by SIGBUS with the default action, for a page that cannot be filled
/// (its line written): SIGBUS's action becomes the default and the process is sent SIGBUS,
/// which it takes as soon as a thread does not block it (this one once the handler returns).
/// Not through the previous handler: the Swift runtime's would suspend every thread and
/// start a helper process to print a backtrace of the fault path, which says nothing the
/// line does not, and a helper whose process dies under it (another thread's fault, a
/// kill) waits for good on a socket it holds both ends of.
static void end_by_sigbus(void) {
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(SIGBUS, &fallback, 0);
    direct_syscall(SYS_kill, direct_syscall(SYS_getpid, 0, 0, 0, 0), SIGBUS, 0, 0);
}

static void handler(int signal, siginfo_t *info, void *context) {
    // A fault, not a signal someone sent.
    if (info->si_code > 0) {
        uint64_t address = (uint64_t)(uintptr_t)info->si_addr;
        int limit = atomic_load(&slotsInUse);
        for (int slot = 0; slot < limit; slot++) {
            struct region *region = &regions[slot];
            if (address < atomic_load(&region->start) || address >= atomic_load(&region->end)) continue;
            atomic_fetch_add(&region->users, 1);
            // Checked again under `users`: a deactivation that cleared the context waits for
            // us, one that has not yet cleared it cannot free the context under us.
            void *owner = atomic_load(&region->context);
            dyld3_pagein_fill fill = atomic_load(&region->fill);
            if (owner && fill && address >= atomic_load(&region->start) && address < atomic_load(&region->end)) {
                unsigned char staging[DYLD3_PAGEIN_PAGE_SIZE] __attribute__((aligned(64)));
                int result = fill(owner, address, staging);
                atomic_fetch_sub(&region->users, 1);
                if (result == DYLD3_PAGEIN_RETRY) return;
                if (result == DYLD3_PAGEIN_FAILED) {
                    end_by_sigbus();
                    return;
                }
                break;
            }
            atomic_fetch_sub(&region->users, 1);
        }
    }
    chain(signal, info, context);
}

static void install(void) {
    // BoringSSL detects the CPU's features on its first digest (under a once): here, not
    // in a fault.
    uint8_t digest[48];
    CCryptoBoringSSL_SHA1(digest, 0, digest);
    CCryptoBoringSSL_SHA256(digest, 0, digest);
    CCryptoBoringSSL_SHA384(digest, 0, digest);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &previous) != 0) installError = errno;
}

int dyld3_pagein_install(void) {
    pthread_once(&installOnce, install);
    return -installError;
}

int dyld3_pagein_activate(uint64_t start, uint64_t end, void *context, dyld3_pagein_fill fill) {
    for (int slot = 0; slot < DYLD3_PAGEIN_REGIONS; slot++) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&regions[slot].claimed, &expected, 1)) continue;
        struct region *region = &regions[slot];
        atomic_store(&region->fill, fill);
        atomic_store(&region->context, context);
        atomic_store(&region->start, start);
        atomic_store(&region->end, end);
        int limit = atomic_load(&slotsInUse);
        while (limit < slot + 1 && !atomic_compare_exchange_weak(&slotsInUse, &limit, slot + 1)) {}
        return slot;
    }
    return -1;
}

int dyld3_pagein_deactivate(int slot, uint64_t limit_ns) {
    if (slot < 0 || slot >= DYLD3_PAGEIN_REGIONS) return 1;
    struct region *region = &regions[slot];
    atomic_store(&region->end, 0);
    atomic_store(&region->start, 0);
    atomic_store(&region->context, 0);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (atomic_load(&region->users) != 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t waited = (uint64_t)(now.tv_sec - start.tv_sec) * 1000000000ull + (uint64_t)(now.tv_nsec - start.tv_nsec);
        if (waited > limit_ns) return 0;
        sched_yield();
    }
    atomic_store(&region->fill, 0);
    atomic_store(&region->claimed, 0);
    return 1;
}

/// Writes `length` bytes to standard error.
static void report(const void *bytes, uint64_t length) {
    const unsigned char *cursor = bytes;
    while (length > 0) {
        long wrote = direct_syscall(SYS_write, 2, (long)cursor, (long)length, 0);
        if (wrote == -EINTR) continue;
        if (wrote <= 0) return;
        cursor += wrote;
        length -= (uint64_t)wrote;
    }
}

void dyld3_pagein_report_failure(const void *path, uint64_t path_length, uint64_t vm_offset, const void *reason, uint64_t reason_length) {
    static const char start[] = "dyld3: page-in: ", middle[] = ": cannot fill page +0x";
    char digits[18];
    uint64_t length = 0;
    int top = 60;
    while (top > 0 && ((vm_offset >> top) & 0xf) == 0) top -= 4;
    for (; top >= 0; top -= 4) digits[length++] = "0123456789abcdef"[(vm_offset >> top) & 0xf];
    digits[length++] = ':';
    digits[length++] = ' ';
    // One write when the line fits, so lines from threads failing at once do not interleave.
    const void *pieces[] = {start, path, middle, digits, reason, "\n"};
    uint64_t lengths[] = {sizeof start - 1, path_length, sizeof middle - 1, length, reason_length, 1};
    char line[1024];
    uint64_t total = 0;
    for (int piece = 0; piece < 6; piece++) total += lengths[piece];
    if (total > sizeof line) {
        for (int piece = 0; piece < 6; piece++) report(pieces[piece], lengths[piece]);
        return;
    }
    uint64_t at = 0;
    for (int piece = 0; piece < 6; piece++) {
        memcpy(line + at, pieces[piece], lengths[piece]);
        at += lengths[piece];
    }
    report(line, total);
}

int64_t dyld3_pagein_pread(int fd, void *buffer, uint64_t count, uint64_t offset) {
    long result;
    do {
        result = direct_syscall(SYS_pread64, fd, (long)buffer, (long)count, (long)offset);
    } while (result == -EINTR);
    return result;
}

int dyld3_pagein_copy(int fd, uint64_t destination, const void *source, uint64_t length, int64_t *copied) {
    struct uffdio_copy copy = {
        .dst = destination, .src = (uint64_t)(uintptr_t)source, .len = length, .mode = UFFDIO_COPY_MODE_DONTWAKE,
    };
    long result = direct_syscall(SYS_ioctl, fd, (long)UFFDIO_COPY, (long)&copy, 0);
    *copied = copy.copy > 0 ? copy.copy : 0;
    return (int)result;
}

int dyld3_pagein_hash_matches(uint8_t type, const void *bytes, uint64_t count, const void *expected, uint64_t expected_count) {
    uint8_t digest[48];
    uint64_t size;
    switch (type) {
    case 1: CCryptoBoringSSL_SHA1(bytes, count, digest); size = 20; break;
    case 2: case 3: CCryptoBoringSSL_SHA256(bytes, count, digest); size = 32; break;
    case 4: CCryptoBoringSSL_SHA384(bytes, count, digest); size = 48; break;
    default: return 0;
    }
    return expected_count <= size && memcmp(digest, expected, expected_count) == 0;
}
