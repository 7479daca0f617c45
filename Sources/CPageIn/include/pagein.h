// Page-in linking's fault path on the faulting thread (docs/page-in.md): a process-wide
// SIGBUS handler and a registry of the launch regions whose missing pages it fills.
//
// A region's segments are registered with a userfaultfd opened with UFFD_FEATURE_SIGBUS:
// a touch of a missing page raises SIGBUS on the touching thread instead of waiting for a
// handler thread. The handler looks the address up in the registry and calls the region's
// fill function with a page-sized staging buffer on the faulting thread's stack; the fill
// installs the page (UFFDIO_COPY) and the instruction is retried. Anything else, a page
// that cannot be filled included, goes to the handler that was installed before (the
// Swift runtime's crash handler, or the default action, which ends the process).
#ifndef DYLD3_CPAGEIN_H
#define DYLD3_CPAGEIN_H

#include <stdint.h>

/// The staging buffer's size: page-in needs pages of exactly this size.
#define DYLD3_PAGEIN_PAGE_SIZE 4096

/// The most regions live at once (launches with page-in memory in one process).
#define DYLD3_PAGEIN_REGIONS 256

/// Fills the missing page holding `address`, assembling it in `staging`
/// (DYLD3_PAGEIN_PAGE_SIZE bytes). Returns 1 when the instruction should be retried (the
/// page is there now, or the memory is gone and the retry faults as on any unmapped
/// address), 0 when the fault is not one this region can resolve (the previous handler
/// decides: the process ends). Runs in a signal handler: no allocation, no locks.
typedef int (*dyld3_pagein_fill)(void *context, uint64_t address, void *staging);

/// Installs the SIGBUS handler once per process (later calls do nothing); 0 or -errno.
int dyld3_pagein_install(void);

/// Makes [start, end) a live region whose faults `fill` resolves with `context`: the slot
/// to deactivate it with, or -1 when every slot is taken.
int dyld3_pagein_activate(uint64_t start, uint64_t end, void *context, dyld3_pagein_fill fill);

/// Ends a region: no fill starts for it after this returns. Waits up to `limit_ns` for the
/// fills that had started to return: 1 when they all did (the slot is free again), 0 when
/// one is still running (a thread stopped inside its fill): the slot then stays taken and
/// the caller must keep the region's context alive for good.
int dyld3_pagein_deactivate(int slot, uint64_t limit_ns);

/// Writes `length` bytes to standard error (a failure's one line, from the fault path).
void dyld3_pagein_report(const void *bytes, uint64_t length);

#endif
