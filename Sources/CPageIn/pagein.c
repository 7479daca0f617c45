// See include/pagein.h.
#define _GNU_SOURCE
#include "pagein.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
                int savedErrno = errno;
                unsigned char staging[DYLD3_PAGEIN_PAGE_SIZE] __attribute__((aligned(64)));
                int retry = fill(owner, address, staging);
                errno = savedErrno;
                atomic_fetch_sub(&region->users, 1);
                if (retry) return;
                break;
            }
            atomic_fetch_sub(&region->users, 1);
        }
    }
    chain(signal, info, context);
}

static void install(void) {
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

void dyld3_pagein_report(const void *bytes, uint64_t length) {
    const unsigned char *cursor = bytes;
    while (length > 0) {
        ssize_t wrote = write(2, cursor, length);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return;
        cursor += wrote;
        length -= (uint64_t)wrote;
    }
}
